//! `Env::check`: verifies every page and every tree invariant and reports what it found.
//!
//! For the catalog and each database tree it checks, page by page: the checksum (the pager
//! verifies it on read), the node header and list bounds, strictly ascending keys, fences (every
//! key of a child lies within its parent's separators: `lower <= key < upper`), equal leaf depth,
//! stored records and overflow chains, and the key count against the catalog. Page accounting:
//! every page must be reachable exactly once — from a tree, an overflow chain, the meta pages or
//! the free list — and no page may be unaccounted for. A fault stops the walk of that subtree
//! only; the report lists every fault with the page it names.
//!
//! Everything here reads damaged files by design: checked access only (the module denies
//! `clippy::indexing_slicing` and `clippy::unwrap_used`).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::btree::node::Layout;
use crate::btree::overflow::{self, Stored};
use crate::btree::{KeyBuf, Spec, MAX_DEPTH};
use crate::catalog;
use crate::db::{DbConfig, DbStats};
use crate::error::{Error, PageId, Result};
use crate::storage::{meta, PageSource};
use std::collections::HashMap;
use std::fmt;

/// What the pager tells `check` about its own pages.
#[derive(Clone, Debug, Default)]
pub(crate) struct PagerPages {
    /// Pages of the checked commit (its page count).
    pub total_pages: u64,
    /// The checked commit's txn id.
    pub commit: u64,
    /// What the meta pages, their copies and the file length look like.
    pub meta: crate::storage::MetaCheck,
    /// Meta pages and pages holding the free list.
    pub meta_pages: Vec<PageId>,
    /// Free pages (reusable now or once old readers finish).
    pub free_pages: Vec<PageId>,
}

/// One problem found by `check`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckFault {
    /// The page at fault (`None` for faults of the file as a whole).
    pub page: Option<PageId>,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for CheckFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.page {
            Some(p) => write!(f, "page {p}: {}", self.what),
            None => write!(f, "{}", self.what),
        }
    }
}

/// What `check` found in one database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbReport {
    /// The database's name.
    pub name: String,
    /// Its stored configuration.
    pub config: DbConfig,
    /// Its statistics, from the walk `check` made.
    pub stats: DbStats,
}

/// The result of `Env::check`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// The file's page size.
    pub page_size: usize,
    /// The txn id of the commit checked (the newest).
    pub commit: u64,
    /// Pages of that commit (its page count; the file may hold more).
    pub total_pages: u64,
    /// Pages on the free list (including pages freed but still visible to old readers).
    pub free_pages: u64,
    /// Pages of the pager's own structures (meta pages, free-list pages).
    pub meta_pages: u64,
    /// Pages of the catalog tree.
    pub catalog_pages: u64,
    /// Every database, in name order.
    pub dbs: Vec<DbReport>,
    /// Every fault found (empty: the file is sound).
    pub faults: Vec<CheckFault>,
    /// Findings that are not faults: damage open repaired, pages past the page count left by
    /// a commit that did not complete.
    pub notes: Vec<String>,
}

impl CheckReport {
    /// Whether no fault was found.
    pub fn is_clean(&self) -> bool {
        self.faults.is_empty()
    }
    /// `Err(Error::Corrupted)` naming the first faulty page, if any.
    pub fn into_result(self) -> Result<CheckReport> {
        match self.faults.first() {
            None => Ok(self),
            Some(f) => Err(Error::Corrupted {
                page: f.page.unwrap_or(0),
                what: f.what.clone(),
            }),
        }
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "commit {}: {} pages of {} bytes: {} meta, {} catalog, {} free",
            self.commit,
            self.total_pages,
            self.page_size,
            self.meta_pages,
            self.catalog_pages,
            self.free_pages
        )?;
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        for d in &self.dbs {
            writeln!(
                f,
                "db {:?}: {} keys, height {}, {} leaf + {} branch + {} overflow pages",
                d.name,
                d.stats.key_count,
                d.stats.height,
                d.stats.leaf_pages,
                d.stats.branch_pages,
                d.stats.overflow_pages
            )?;
        }
        if self.faults.is_empty() {
            writeln!(f, "no faults")
        } else {
            for x in &self.faults {
                writeln!(f, "FAULT {x}")?;
            }
            Ok(())
        }
    }
}

/// Who owns each page, for accounting.
#[derive(Default)]
pub(crate) struct Owners {
    owner: HashMap<PageId, String>,
}

impl Owners {
    /// Claims `page` for `who`; a second claim is a fault.
    pub fn claim(&mut self, page: PageId, who: &str, faults: &mut Vec<CheckFault>) -> bool {
        if let Some(prev) = self.owner.get(&page) {
            faults.push(CheckFault {
                page: Some(page),
                what: format!("reachable twice: from {prev} and from {who}"),
            });
            return false;
        }
        self.owner.insert(page, who.to_string());
        true
    }
    pub fn contains(&self, page: PageId) -> bool {
        self.owner.contains_key(&page)
    }
    pub fn pages(&self) -> Vec<PageId> {
        self.owner.keys().copied().collect()
    }
}

fn fault(faults: &mut Vec<CheckFault>, e: Error) {
    match e {
        Error::Corrupted { page, what } => faults.push(CheckFault {
            page: Some(page),
            what,
        }),
        e => faults.push(CheckFault {
            page: None,
            what: e.to_string(),
        }),
    }
}

struct TreeWalk<'a> {
    src: &'a dyn PageSource,
    spec: Spec,
    who: String,
    owners: &'a mut Owners,
    faults: &'a mut Vec<CheckFault>,
    stats: DbStats,
    leaf_depth: Option<usize>,
    keys: u64,
}

impl TreeWalk<'_> {
    fn node(
        &mut self,
        id: PageId,
        depth: usize,
        lo: Option<&KeyBuf>,
        hi: Option<&KeyBuf>,
    ) -> Result<()> {
        if depth >= MAX_DEPTH {
            return Err(Error::Corrupted {
                page: id,
                what: format!("tree deeper than {MAX_DEPTH} levels (a cycle?)"),
            });
        }
        if !self.owners.claim(id, &self.who, self.faults) {
            return Ok(());
        }
        let page = self.src.page(id)?;
        let l = Layout::read(&page, id, &self.spec)?;
        self.stats.height = self.stats.height.max(depth + 1);
        let used = l.used(&page)? as u64;
        self.stats.used_bytes += used;
        let kb = l
            .keys
            .used(l.kregion(&page), l.count)
            .map_err(|f| l.err(f))? as u64;
        self.stats.key_bytes += kb;
        if l.leaf {
            self.stats.leaf_key_bytes += kb;
            self.stats.leaf_record_bytes += used - kb;
        } else {
            self.stats.branch_keys += l.count as u64;
        }
        let bad = |what: String| Error::Corrupted { page: id, what };
        let mut prev: Option<KeyBuf> = None;
        let kr = l.kregion(&page);
        let mut all = Vec::with_capacity(prealloc(l.count, &page));
        l.keys
            .validate(kr, l.count, &mut all)
            .map_err(|what| node_fault(&l, what))?;
        l.recs
            .validate(l.rregion(&page), l.count)
            .map_err(|f| l.err(f))?;
        if let Some(p) = l.keys.head_prefix(kr).map_err(|f| l.err(f))? {
            // A head prefix is shared by both fences (so every key a later insert brings here
            // has it); a node at an edge of the tree has none.
            let fence_ok = |f: Option<&KeyBuf>| match f {
                Some(KeyBuf::Bytes(b)) => b.starts_with(p),
                _ => p.is_empty(),
            };
            if !fence_ok(lo) || !fence_ok(hi) {
                return Err(bad(format!(
                    "head prefix {} not shared by the node's fences",
                    KeyBuf::Bytes(p.to_vec())
                )));
            }
        }
        for (i, k) in all.iter().enumerate() {
            let k = k.as_key();
            if let Some(p) = &prev {
                if k <= p.as_key() {
                    return Err(bad(format!("key {i} ({k}) not above key {} ({p})", i - 1)));
                }
            }
            if let Some(lo) = lo {
                if k < lo.as_key() {
                    return Err(bad(format!("key {k} below the parent's separator {lo}")));
                }
            }
            if let Some(hi) = hi {
                if k >= hi.as_key() {
                    return Err(bad(format!(
                        "key {k} not below the parent's separator {hi}"
                    )));
                }
            }
            prev = Some(k.to_owned());
        }
        if l.leaf {
            self.stats.leaf_pages += 1;
            self.keys += l.count as u64;
            if *self.leaf_depth.get_or_insert(depth) != depth {
                return Err(bad("leaves at different depths".into()));
            }
            for i in 0..l.count {
                if let Stored::Overflow { first, len } =
                    overflow::decode(&self.spec, l.record_raw(&page, i)?, id)?
                {
                    let mut ids = Vec::new();
                    overflow::walk(self.src, first, len, |pid, _| {
                        ids.push(pid);
                        Ok(())
                    })?;
                    for pid in ids {
                        self.stats.overflow_pages += 1;
                        if !self.owners.claim(pid, &self.who, self.faults) {
                            break;
                        }
                    }
                }
            }
        } else {
            self.stats.branch_pages += 1;
            if all.len() != l.count {
                return Err(bad(format!(
                    "{} separator keys decoded, the header says {}",
                    all.len(),
                    l.count
                )));
            }
            for c in 0..=l.count {
                let child = l.child(&page, c)?;
                // Child c lies between separators c - 1 and c; the node's own fences bound the
                // first and the last child (`get` is `None` exactly there, as the length matches).
                let clo = c.checked_sub(1).and_then(|i| all.get(i)).or(lo);
                let chi = all.get(c).or(hi);
                if let Err(e) = self.node(child, depth + 1, clo, chi) {
                    fault(self.faults, e);
                }
            }
        }
        Ok(())
    }
}

/// Room to reserve for `count` entries of a node, `count` read from the page: never more than
/// the page has bytes (a forged count must not size an allocation; the vector grows past this
/// only with entries actually decoded).
pub(crate) fn prealloc(count: usize, page: &[u8]) -> usize {
    count.min(page.len())
}

fn node_fault(l: &Layout, what: String) -> Error {
    Error::Corrupted { page: l.id, what }
}

/// Walks one tree; returns its statistics (key count from the leaves).
pub(crate) fn check_tree(
    src: &dyn PageSource,
    spec: Spec,
    root: PageId,
    who: &str,
    owners: &mut Owners,
    faults: &mut Vec<CheckFault>,
) -> DbStats {
    let mut w = TreeWalk {
        src,
        spec,
        who: who.to_string(),
        owners,
        faults,
        stats: DbStats::default(),
        leaf_depth: None,
        keys: 0,
    };
    if root != 0 {
        if let Err(e) = w.node(root, 0, None, None) {
            fault(w.faults, e);
        }
    }
    let mut s = w.stats;
    s.key_count = w.keys;
    s.bytes = (s.leaf_pages + s.branch_pages + s.overflow_pages) * spec.page_size as u64;
    s
}

/// Checks the catalog and every database tree of a snapshot. Fills `report.dbs`,
/// `report.catalog_pages` and `report.faults`; claims every reachable page in `owners`.
pub(crate) fn check_trees(
    src: &dyn PageSource,
    catalog_root: PageId,
    owners: &mut Owners,
    report: &mut CheckReport,
) {
    let ps = src.page_size();
    let cat = check_tree(
        src,
        catalog::spec(ps),
        catalog_root,
        "the catalog",
        owners,
        &mut report.faults,
    );
    report.catalog_pages = cat.leaf_pages + cat.branch_pages + cat.overflow_pages;
    let list = match catalog::list(src, catalog_root) {
        Ok(l) => l,
        Err(e) => {
            fault(&mut report.faults, e);
            return;
        }
    };
    for (name, e) in list {
        let spec = match Spec::for_config(ps, &e.config) {
            Ok(s) => s,
            Err(err) => {
                report.faults.push(CheckFault {
                    page: Some(catalog_root),
                    what: format!("database {name:?} has an invalid configuration: {err}"),
                });
                continue;
            }
        };
        let stats = check_tree(
            src,
            spec,
            e.root,
            &format!("database {name:?}"),
            owners,
            &mut report.faults,
        );
        if stats.key_count != e.count {
            report.faults.push(CheckFault {
                page: Some(e.root),
                what: format!(
                    "database {name:?}: the catalog says {} keys, the leaves hold {}",
                    e.count, stats.key_count
                ),
            });
        }
        report.dbs.push(DbReport {
            name,
            config: e.config,
            stats,
        });
    }
}

/// Describes one page for debugging (`tersedb dump`): nodes are decoded with the format of the
/// tree that owns them (found by walking the catalog and every tree), overflow pages show their
/// header. Pages of the pager itself (meta, free list) are left to the pager.
pub(crate) fn describe_page(
    src: &dyn PageSource,
    catalog_root: PageId,
    id: PageId,
) -> Result<Option<String>> {
    use crate::storage::{PageKind, PAGE_KIND_OFFSET};
    let page = src.page(id)?;
    let ps = src.page_size();
    let kind = page.get(PAGE_KIND_OFFSET).copied().unwrap_or(0);
    match PageKind::from_u8(kind) {
        Some(PageKind::Overflow) => {
            let (Some(len), Some(next)) = (meta::u32_at(&page, 12), meta::u64_at(&page, 16)) else {
                return Err(Error::Corrupted {
                    page: id,
                    what: "short overflow page".into(),
                });
            };
            Ok(Some(format!(
                "page {id}: overflow page with {len} value bytes, next page {next}"
            )))
        }
        Some(PageKind::Leaf) | Some(PageKind::Branch) => {
            let mut trees = vec![("the catalog".to_string(), catalog::spec(ps), catalog_root)];
            for (name, e) in catalog::list(src, catalog_root)? {
                if let Ok(spec) = Spec::for_config(ps, &e.config) {
                    trees.push((format!("database {name:?}"), spec, e.root));
                }
            }
            for (who, spec, root) in trees {
                let mut owners = Owners::default();
                let mut faults = Vec::new();
                check_tree(src, spec, root, &who, &mut owners, &mut faults);
                if owners.contains(id) {
                    let body = crate::btree::node::describe(&page, id, &spec, 1000)?;
                    return Ok(Some(format!("{body}  (a node of {who})")));
                }
            }
            Ok(Some(format!(
                "page {id}: a tree node that no tree reaches (kind {kind})"
            )))
        }
        _ => Ok(None),
    }
}

//! The query language's syntax tree. A [`Query`] is built in code or parsed from text
//! ([`Query::parse`]); [`Display`](std::fmt::Display) prints it back as text that parses to an
//! equal tree (every AND/OR chain and arithmetic operation in parentheses, except a left operand
//! that continues the same chain, so long left-deep chains print flat). A tree built in code
//! deeper than the parser's limits (`parse::MAX_NESTING` parentheses, `MAX_TREE_DEPTH`) prints
//! text that the parser refuses.
//!
//! ```text
//! Query  { aggregates: [Aggregate], db: name, filter: Option<Pred>,
//!          select: [SelectItem], group_by: Option<GroupBy>, order, limit, offset }
//! Pred   Cmp(column op Expr) | Between | In | Like | And | Or | Not
//! Expr   Int(i128) | Float(f64) | Str(text) | Bin(op, Expr, Expr) | Subquery(Query)  constants
//! ```
//!
//! Three kinds of query, told apart by the SELECT list: aggregates only (one row), `key` /
//! `record` / `*` only (one row per selected entry), or with `GROUP BY` the group expression
//! and aggregates (one row per non-empty group). `select` lists the output columns in order;
//! a query built in code with [`Query::select`] alone returns its aggregates.
//!
//! Nodes parsed from text remember where they started ([`At`], a 1-based character column);
//! positions never take part in `==`.

use std::fmt;

/// Where a node starts in the query text: a 1-based character column, `None` for nodes built
/// in code. Always equal to any other `At`, so parsed and hand-built trees compare equal.
#[derive(Clone, Copy, Debug, Default)]
pub struct At(pub Option<u32>);

impl PartialEq for At {
    fn eq(&self, _: &At) -> bool {
        true
    }
}

/// A column of a database: its key, or its (numeric) record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    /// The key.
    Key,
    /// The record, read as a number (per the database's value type).
    Record,
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Column::Key => "key",
            Column::Record => "record",
        })
    }
}

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggFunc {
    /// `COUNT(*)`: selected entries.
    CountStar,
    /// `COUNT(col)`: selected entries (columns are never NULL).
    Count(Column),
    /// `COUNT(DISTINCT col)`.
    CountDistinct(Column),
    /// `SUM(col)`: exact for integers.
    Sum(Column),
    /// Exact sum divided by the count, as f64.
    Avg(Column),
    /// `MIN(col)`.
    Min(Column),
    /// `MAX(col)`.
    Max(Column),
    /// `TOP(k, col)`: the k largest values, largest first.
    Top(u64, Column),
    /// `BOTTOM(k, col)`: the k smallest values, smallest first.
    Bottom(u64, Column),
}

impl AggFunc {
    /// The column the function reads (`None` for `COUNT(*)`).
    pub fn column(&self) -> Option<Column> {
        match *self {
            AggFunc::CountStar => None,
            AggFunc::Count(c)
            | AggFunc::CountDistinct(c)
            | AggFunc::Sum(c)
            | AggFunc::Avg(c)
            | AggFunc::Min(c)
            | AggFunc::Max(c)
            | AggFunc::Top(_, c)
            | AggFunc::Bottom(_, c) => Some(c),
        }
    }
}

/// One aggregate of the SELECT list.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aggregate {
    /// The function and the column it reads.
    pub func: AggFunc,
    /// Where it was written in the query text (for errors).
    pub at: At,
}

impl Aggregate {
    /// An aggregate built in code (no text position).
    pub fn new(func: AggFunc) -> Self {
        Aggregate { func, at: At(None) }
    }

    /// The aggregate as written, for every aggregate without a parameter (`None` for TOP and
    /// BOTTOM): result columns are named without going through the formatter.
    pub fn static_name(&self) -> Option<&'static str> {
        use AggFunc::*;
        use Column::{Key as K, Record as R};
        Some(match self.func {
            CountStar => "COUNT(*)",
            Count(K) => "COUNT(key)",
            Count(R) => "COUNT(record)",
            CountDistinct(K) => "COUNT(DISTINCT key)",
            CountDistinct(R) => "COUNT(DISTINCT record)",
            Sum(K) => "SUM(key)",
            Sum(R) => "SUM(record)",
            Avg(K) => "AVG(key)",
            Avg(R) => "AVG(record)",
            Min(K) => "MIN(key)",
            Min(R) => "MIN(record)",
            Max(K) => "MAX(key)",
            Max(R) => "MAX(record)",
            Top(..) | Bottom(..) => return None,
        })
    }
}

impl From<AggFunc> for Aggregate {
    fn from(func: AggFunc) -> Self {
        Aggregate::new(func)
    }
}

impl fmt::Display for Aggregate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = self.static_name() {
            return f.write_str(name);
        }
        match self.func {
            AggFunc::Top(k, c) => write!(f, "TOP({k}, {c})"),
            AggFunc::Bottom(k, c) => write!(f, "BOTTOM({k}, {c})"),
            _ => Ok(()),
        }
    }
}

/// Arithmetic on constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// Integer division truncates toward zero; division by zero is an error.
    Div,
    /// `%` (remainder; by zero is an error).
    Rem,
}

impl ArithOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Rem => "%",
        }
    }
}

/// A constant expression: literals, arithmetic and scalar subqueries (never a column).
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An integer literal.
    Int(i128),
    /// A finite float (NaN and infinities cannot be written as literals).
    Float(f64),
    /// A string literal (`'text'`, `''` for a quote): compares with string keys.
    Str(String),
    /// `l op r`.
    Bin {
        /// The operator.
        op: ArithOp,
        /// The left operand.
        l: Box<Expr>,
        /// The right operand.
        r: Box<Expr>,
        /// Where it was written (for errors).
        at: At,
    },
    /// A query with exactly one aggregate that returns a single value (not TOP/BOTTOM).
    Subquery(Box<Query>),
}

impl Expr {
    /// `l op r`, built in code.
    pub fn bin(op: ArithOp, l: Expr, r: Expr) -> Expr {
        Expr::Bin {
            op,
            l: Box::new(l),
            r: Box::new(r),
            at: At(None),
        }
    }
    /// A scalar subquery, built in code.
    pub fn subquery(q: Query) -> Expr {
        Expr::Subquery(Box::new(q))
    }
}

impl From<i128> for Expr {
    fn from(v: i128) -> Self {
        Expr::Int(v)
    }
}
impl From<i64> for Expr {
    fn from(v: i64) -> Self {
        Expr::Int(v as i128)
    }
}
impl From<u64> for Expr {
    fn from(v: u64) -> Self {
        Expr::Int(v as i128)
    }
}
impl From<u32> for Expr {
    fn from(v: u32) -> Self {
        Expr::Int(v as i128)
    }
}
impl From<&str> for Expr {
    fn from(v: &str) -> Self {
        Expr::Str(v.to_string())
    }
}
impl From<f64> for Expr {
    fn from(v: f64) -> Self {
        Expr::Float(v)
    }
}

impl ArithOp {
    /// Operators of one class associate left to right without parentheses.
    fn class(self) -> u8 {
        match self {
            ArithOp::Add | ArithOp::Sub => 0,
            ArithOp::Mul | ArithOp::Div | ArithOp::Rem => 1,
        }
    }
}

impl Expr {
    /// How deep the printed text nests, counted as the parser counts (each parenthesis, each
    /// `SELECT`, each `NOT`): see [`Query::print_nesting`].
    fn print_nesting(&self) -> usize {
        match self {
            Expr::Int(_) | Expr::Float(_) | Expr::Str(_) => 0,
            Expr::Bin { .. } => 1 + self.chain_nesting(),
            Expr::Subquery(q) => 1 + q.print_nesting(),
        }
    }

    /// [`Expr::print_nesting`] of what [`Expr::fmt_chain`] prints.
    fn chain_nesting(&self) -> usize {
        match self {
            Expr::Bin { op, l, r, .. } => {
                let left = match &**l {
                    Expr::Bin { op: lop, .. } if lop.class() == op.class() => l.chain_nesting(),
                    _ => l.print_nesting(),
                };
                left.max(r.print_nesting())
            }
            e => e.print_nesting(),
        }
    }

    /// A binary operation without its outer parentheses: a left operand of the same class is
    /// printed bare (`1 + 2 - 3` parses back left-deep), so long chains print flat and parse
    /// back within the parser's nesting limit.
    fn fmt_chain(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Bin { op, l, r, .. } => {
                match &**l {
                    Expr::Bin { op: lop, .. } if lop.class() == op.class() => l.fmt_chain(f)?,
                    _ => write!(f, "{l}")?,
                }
                write!(f, " {} {r}", op.symbol())
            }
            e => write!(f, "{e}"),
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Int(v) => write!(f, "{v}"),
            // `{:?}` is the shortest text that reads back as the same f64, always with a `.`
            // or an exponent, so it re-parses as a float.
            Expr::Float(v) => write!(f, "{v:?}"),
            Expr::Str(v) => write!(f, "{}", quote_str(v)),
            Expr::Bin { .. } => {
                f.write_str("(")?;
                self.fmt_chain(f)?;
                f.write_str(")")
            }
            Expr::Subquery(q) => write!(f, "({q})"),
        }
    }
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=` (or `<>`)
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
    /// The operator with its operands swapped (`c < key` is `key > c`).
    pub fn swapped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            o => o,
        }
    }
}

/// A condition on the key and the record.
#[derive(Clone, Debug, PartialEq)]
pub enum Pred {
    /// `col op value`.
    Cmp {
        /// The column tested.
        col: Column,
        /// The comparison.
        op: CmpOp,
        /// The value compared with.
        value: Expr,
        /// Where it was written (for errors).
        at: At,
    },
    /// `col BETWEEN lo AND hi` (both inclusive).
    Between {
        /// The column tested.
        col: Column,
        /// The lower bound (inclusive).
        lo: Expr,
        /// The upper bound (inclusive).
        hi: Expr,
        /// Where it was written (for errors).
        at: At,
    },
    /// `col IN (v, ...)`.
    In {
        /// The column tested.
        col: Column,
        /// The values.
        list: Vec<Expr>,
        /// Where it was written (for errors).
        at: At,
    },
    /// `col LIKE 'pattern'` on string keys: `%` matches any run of characters, `_` one
    /// character (a byte); a pattern with a fixed prefix (`'2024-%'`) scans only that range.
    Like {
        /// The column tested.
        col: Column,
        /// The pattern.
        pattern: String,
        /// Where it was written (for errors).
        at: At,
    },
    /// Both hold.
    And(Box<Pred>, Box<Pred>),
    /// Either holds.
    Or(Box<Pred>, Box<Pred>),
    /// It does not hold.
    Not(Box<Pred>),
}

impl Pred {
    /// `col op value`, built in code.
    pub fn cmp(col: Column, op: CmpOp, value: impl Into<Expr>) -> Pred {
        Pred::Cmp {
            col,
            op,
            value: value.into(),
            at: At(None),
        }
    }
    /// `col BETWEEN lo AND hi`, built in code.
    pub fn between(col: Column, lo: impl Into<Expr>, hi: impl Into<Expr>) -> Pred {
        Pred::Between {
            col,
            lo: lo.into(),
            hi: hi.into(),
            at: At(None),
        }
    }
    /// `col IN (list)`, built in code.
    pub fn is_in(col: Column, list: Vec<Expr>) -> Pred {
        Pred::In {
            col,
            list,
            at: At(None),
        }
    }
    /// `col LIKE pattern`, built in code.
    pub fn like(col: Column, pattern: impl Into<String>) -> Pred {
        Pred::Like {
            col,
            pattern: pattern.into(),
            at: At(None),
        }
    }
    /// `self AND other`.
    pub fn and(self, other: Pred) -> Pred {
        Pred::And(Box::new(self), Box::new(other))
    }
    /// `self OR other`.
    pub fn or(self, other: Pred) -> Pred {
        Pred::Or(Box::new(self), Box::new(other))
    }
    /// `NOT self`.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Pred {
        Pred::Not(Box::new(self))
    }
}

impl Pred {
    /// See [`Query::print_nesting`].
    fn print_nesting(&self) -> usize {
        match self {
            Pred::Cmp { value, .. } => value.print_nesting(),
            Pred::Between { lo, hi, .. } => lo.print_nesting().max(hi.print_nesting()),
            Pred::In { list, .. } => list.iter().map(Expr::print_nesting).max().unwrap_or(0),
            Pred::Like { .. } => 0,
            Pred::And(..) | Pred::Or(..) => 1 + self.chain_nesting(),
            // `NOT (p)`: the NOT and the parenthesis.
            Pred::Not(p) => 2 + p.print_nesting(),
        }
    }

    /// [`Pred::print_nesting`] of what [`Pred::fmt_chain`] prints.
    fn chain_nesting(&self) -> usize {
        match self {
            Pred::And(l, r) | Pred::Or(l, r) => {
                let same = matches!(
                    (self, &**l),
                    (Pred::And(..), Pred::And(..)) | (Pred::Or(..), Pred::Or(..))
                );
                let left = if same {
                    l.chain_nesting()
                } else {
                    l.print_nesting()
                };
                left.max(r.print_nesting())
            }
            p => p.print_nesting(),
        }
    }

    /// AND / OR without outer parentheses; a left operand with the same connective is printed
    /// bare (`a AND b AND c` parses back left-deep).
    fn fmt_chain(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (l, r, word) = match self {
            Pred::And(l, r) => (l, r, "AND"),
            Pred::Or(l, r) => (l, r, "OR"),
            p => return write!(f, "{p}"),
        };
        let same = matches!(
            (self, &**l),
            (Pred::And(..), Pred::And(..)) | (Pred::Or(..), Pred::Or(..))
        );
        if same {
            l.fmt_chain(f)?;
        } else {
            write!(f, "{l}")?;
        }
        write!(f, " {word} {r}")
    }
}

impl fmt::Display for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pred::Cmp { col, op, value, .. } => write!(f, "{col} {} {value}", op.symbol()),
            Pred::Between { col, lo, hi, .. } => write!(f, "{col} BETWEEN {lo} AND {hi}"),
            Pred::In { col, list, .. } => {
                write!(f, "{col} IN (")?;
                for (i, e) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str(")")
            }
            Pred::Like { col, pattern, .. } => write!(f, "{col} LIKE {}", quote_str(pattern)),
            Pred::And(..) | Pred::Or(..) => {
                f.write_str("(")?;
                self.fmt_chain(f)?;
                f.write_str(")")
            }
            Pred::Not(p) => write!(f, "NOT ({p})"),
        }
    }
}

/// What `GROUP BY` groups on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupBy {
    /// `GROUP BY key / N`: buckets of `N` consecutive keys (`N >= 1`), such as hours of
    /// second timestamps with `N = 3600`. Each bucket is a key range, folded block by block.
    KeyDiv(u64),
    /// `GROUP BY record`: one group per distinct (numeric) record value.
    Record,
}

impl fmt::Display for GroupBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupBy::KeyDiv(n) => write!(f, "key / {n}"),
            GroupBy::Record => f.write_str("record"),
        }
    }
}

/// One output column of the SELECT list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Item {
    /// `aggregates[i]`.
    Agg(usize),
    /// The entry's key (row queries).
    Key,
    /// The entry's record (row queries).
    Record,
    /// The group: the bucket number `key / N` or the record value.
    Group,
    /// `key / N * N`: the first key of a bucket (a timestamp for time buckets).
    BucketStart,
}

/// An output column and its name (`AS alias`).
#[derive(Clone, Debug, PartialEq)]
pub struct SelectItem {
    /// What the column holds.
    pub item: Item,
    /// Its name from `AS alias` (`None`: named as written).
    pub alias: Option<String>,
}

/// `SELECT items FROM db [WHERE filter] [GROUP BY g] [ORDER BY key [DESC]] [LIMIT n [OFFSET m]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// The aggregates computed (referred to by the SELECT list).
    pub aggregates: Vec<Aggregate>,
    /// Name of the database (case-sensitive).
    pub db: String,
    /// The WHERE condition.
    pub filter: Option<Pred>,
    /// The output columns in order; empty means the aggregates in order (queries built with
    /// [`Query::select`] alone).
    pub select: Vec<SelectItem>,
    /// `GROUP BY key / N` or `GROUP BY record`.
    pub group_by: Option<GroupBy>,
    /// `ORDER BY key DESC` (or the group, descending); rows and groups come in ascending key
    /// (group) order otherwise.
    pub descending: bool,
    /// Most rows returned (row and group queries).
    pub limit: Option<u64>,
    /// Rows skipped before the first returned (row and group queries).
    pub offset: u64,
}

impl Query {
    /// A query without aggregates or filter; add them with [`Query::select`] and
    /// [`Query::filter`].
    pub fn from_db(db: impl Into<String>) -> Query {
        Query {
            aggregates: Vec::new(),
            db: db.into(),
            filter: None,
            select: Vec::new(),
            group_by: None,
            descending: false,
            limit: None,
            offset: 0,
        }
    }
    /// Whether the query's tree (conditions, operators, literals and subqueries along one path)
    /// is deeper than `max`. The walk stops at the first level past `max`, so it recurses at
    /// most `max + 2` calls deep however deep a tree built in code is; it allocates nothing (it
    /// runs before every query: a heap stack was one of a small COUNT's four allocations). A
    /// parsed query is never deeper than the parser's `MAX_TREE_DEPTH`.
    pub fn deeper_than(&self, max: usize) -> bool {
        fn query(q: &Query, d: usize, max: usize) -> bool {
            d > max || q.filter.as_ref().is_some_and(|p| pred(p, d, max))
        }
        fn pred(p: &Pred, d: usize, max: usize) -> bool {
            if d > max {
                return true;
            }
            match p {
                Pred::And(a, b) | Pred::Or(a, b) => pred(a, d + 1, max) || pred(b, d + 1, max),
                Pred::Not(a) => pred(a, d + 1, max),
                Pred::Cmp { value, .. } => sub(value, d + 1, max),
                Pred::Between { lo, hi, .. } => sub(lo, d + 1, max) || sub(hi, d + 1, max),
                Pred::In { list, .. } => list.iter().any(|e| sub(e, d + 1, max)),
                Pred::Like { .. } => false,
            }
        }
        // `expr` with constants answered in place (most operands are: no call for them).
        #[inline(always)]
        fn sub(e: &Expr, d: usize, max: usize) -> bool {
            match e {
                Expr::Int(_) | Expr::Float(_) | Expr::Str(_) => d > max,
                _ => expr(e, d, max),
            }
        }
        fn expr(e: &Expr, d: usize, max: usize) -> bool {
            if d > max {
                return true;
            }
            match e {
                Expr::Bin { l, r, .. } => sub(l, d + 1, max) || sub(r, d + 1, max),
                Expr::Subquery(q) => query(q, d + 1, max),
                Expr::Int(_) | Expr::Float(_) | Expr::Str(_) => false,
            }
        }
        query(self, 0, max)
    }

    /// How deep the printed query nests, counted as the parser counts against its limit
    /// (`parse::MAX_NESTING`): the `SELECT`, each parenthesis and each `NOT`. Printing puts
    /// every operation in parentheses, so text can nest less than its printed form (`-x` and
    /// `1 + 2 * 3` need none); the parser refuses what would print deeper than the limit, so
    /// that every parsed query prints as text that parses. Recursion is bounded by the tree
    /// depth the parser allows.
    pub fn print_nesting(&self) -> usize {
        1 + self.filter.as_ref().map_or(0, Pred::print_nesting)
    }
    /// Adds an aggregate to the SELECT list.
    pub fn select(mut self, f: AggFunc) -> Query {
        self.aggregates.push(Aggregate::new(f));
        if !self.select.is_empty() {
            self.select.push(SelectItem {
                item: Item::Agg(self.aggregates.len() - 1),
                alias: None,
            });
        }
        self
    }
    /// Adds a column (`key`, `record`, the group or a bucket's start) to the SELECT list.
    pub fn column(mut self, item: Item) -> Query {
        if self.select.is_empty() {
            self.select = (0..self.aggregates.len())
                .map(|i| SelectItem {
                    item: Item::Agg(i),
                    alias: None,
                })
                .collect();
        }
        self.select.push(SelectItem { item, alias: None });
        self
    }
    /// Sets the WHERE condition (replacing any earlier one).
    pub fn filter(mut self, p: Pred) -> Query {
        self.filter = Some(p);
        self
    }
    /// Sets the GROUP BY.
    pub fn group_by(mut self, g: GroupBy) -> Query {
        self.group_by = Some(g);
        self
    }
    /// Sets `ORDER BY key DESC` (true) or ascending order.
    pub fn descending(mut self, d: bool) -> Query {
        self.descending = d;
        self
    }
    /// Sets `LIMIT n`.
    pub fn limit(mut self, n: u64) -> Query {
        self.limit = Some(n);
        self
    }
    /// Sets `OFFSET n`.
    pub fn offset(mut self, n: u64) -> Query {
        self.offset = n;
        self
    }

    /// The output columns in order (the aggregates when `select` is empty).
    pub fn items(&self) -> Vec<SelectItem> {
        if self.select.is_empty() {
            (0..self.aggregates.len())
                .map(|i| SelectItem {
                    item: Item::Agg(i),
                    alias: None,
                })
                .collect()
        } else {
            self.select.clone()
        }
    }

    /// Whether the query returns rows of entries (`SELECT key, record`, `SELECT *`).
    pub fn is_row_query(&self) -> bool {
        self.group_by.is_none()
            && !self.select.is_empty()
            && self
                .select
                .iter()
                .any(|s| matches!(s.item, Item::Key | Item::Record))
    }

    /// The text of one output column as the query prints it (without its alias).
    pub fn item_text(&self, item: Item) -> String {
        match item {
            Item::Agg(i) => self
                .aggregates
                .get(i)
                .map_or_else(|| format!("?{i}"), |a| a.to_string()),
            Item::Key => "key".into(),
            Item::Record => "record".into(),
            Item::Group => match self.group_by {
                Some(g) => g.to_string(),
                None => "group".into(),
            },
            Item::BucketStart => match self.group_by {
                Some(GroupBy::KeyDiv(n)) => format!("key / {n} * {n}"),
                _ => "key".into(),
            },
        }
    }
}

/// Words the language reserves (case-insensitive); a database with such a name is written
/// quoted.
pub const KEYWORDS: &[&str] = &[
    "SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "BETWEEN", "IN", "COUNT", "DISTINCT", "SUM",
    "AVG", "MIN", "MAX", "TOP", "BOTTOM", "KEY", "RECORD", "GROUP", "BY", "ORDER", "ASC", "DESC",
    "LIMIT", "OFFSET", "AS", "LIKE",
];

/// A database name as the parser reads it: bare when it is an identifier that is not a
/// keyword, else double-quoted with `""` for a quote.
pub fn quote_name(name: &str) -> String {
    let bare = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(name));
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// A string literal as the parser reads it: single-quoted, `''` for a quote.
pub fn quote_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        let items = self.items();
        let all = self.group_by.is_none()
            && matches!(
                items.as_slice(),
                [
                    SelectItem {
                        item: Item::Key,
                        alias: None,
                    },
                    SelectItem {
                        item: Item::Record,
                        alias: None,
                    },
                ]
            );
        if all {
            f.write_str("*")?;
        }
        for (i, s) in items.iter().enumerate().filter(|_| !all) {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(&self.item_text(s.item))?;
            if let Some(a) = &s.alias {
                write!(f, " AS {}", quote_name(a))?;
            }
        }
        write!(f, " FROM {}", quote_name(&self.db))?;
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        if let Some(g) = self.group_by {
            write!(f, " GROUP BY {g}")?;
        }
        if self.descending {
            match self.group_by {
                Some(g) => write!(f, " ORDER BY {g} DESC")?,
                None => f.write_str(" ORDER BY key DESC")?,
            }
        }
        if let Some(n) = self.limit {
            write!(f, " LIMIT {n}")?;
        }
        if self.offset > 0 {
            write!(f, " OFFSET {}", self.offset)?;
        }
        Ok(())
    }
}

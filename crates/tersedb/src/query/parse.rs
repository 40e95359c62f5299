//! The parser: text to [`Query`]. A lexer, then precedence climbing over one generic node type
//! (so `(` needs no backtracking: it may open a condition or an expression), then a lowering
//! step that checks each node is used where it may be (a column on one side of a comparison,
//! constants on the other) and builds the typed tree.
//!
//! ```text
//! text      := query [';']
//! query     := SELECT item {',' item} FROM name [WHERE cond] [GROUP BY group]
//!              [ORDER BY order [ASC | DESC]] [LIMIT integer] [OFFSET integer]
//! item      := ('*' | KEY | RECORD | KEY '/' integer ['*' integer] | agg) [AS name]
//! group     := KEY '/' integer | RECORD            order := KEY | group
//! agg       := COUNT '(' '*' ')' | COUNT '(' [DISTINCT] col ')'
//!            | (SUM | AVG | MIN | MAX) '(' col ')' | (TOP | BOTTOM) '(' k [',' col] ')'
//! cond      := and {OR and}          and := not {AND not}          not := NOT not | test
//! test      := sum [cmpop sum | [NOT] BETWEEN sum AND sum | [NOT] IN '(' [sum {',' sum}] ')'
//!              | [NOT] LIKE string]
//! sum       := product {('+' | '-') product}    product := unary {('*' | '/' | '%') unary}
//! unary     := '-' unary | primary
//! primary   := integer | float | string | KEY | RECORD | '(' query ')' | '(' cond ')'
//! string    := "'" chars ("''" for a quote) "'"
//! cmpop     := '=' | '!=' | '<>' | '<' | '<=' | '>' | '>='
//! name      := identifier (not a keyword) | '"' chars ('""' for a quote) '"'
//! ```
//!
//! Keywords are case-insensitive. Nesting is limited to [`MAX_NESTING`] levels, so hostile input
//! cannot exhaust the stack; every failure is a [`QueryError`] naming the column, never a panic.

use super::ast::{
    AggFunc, Aggregate, ArithOp, At, CmpOp, Column, Expr, GroupBy, Item, Pred, Query, SelectItem,
    KEYWORDS,
};
use super::error::QueryError;
use super::suggest::did_you_mean;

/// Deepest nesting of parentheses, NOT and unary minus (together) the parser accepts.
pub const MAX_NESTING: usize = 64;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    Str(String),
    Int(u128),
    Float(f64),
    Sym(&'static str),
    End,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Word(w) if is_keyword(w) => format!("keyword {}", w.to_ascii_uppercase()),
            Tok::Word(w) => format!("name {w}"),
            Tok::Quoted(w) => format!("name \"{w}\""),
            Tok::Str(w) => format!("string '{w}'"),
            Tok::Int(v) => format!("number {v}"),
            Tok::Float(v) => format!("number {v:?}"),
            Tok::Sym(s) => format!("'{s}'"),
            Tok::End => "the end of the query".into(),
        }
    }
}

fn is_keyword(w: &str) -> bool {
    KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(w))
}

fn syntax(at: u32, what: impl Into<String>) -> QueryError {
    QueryError::Syntax {
        at,
        what: what.into(),
    }
}

fn lex(text: &str) -> Result<Vec<(Tok, u32)>, QueryError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let col = |i: usize| (i + 1).min(u32::MAX as usize) as u32;
    let at = |i: usize| chars.get(i).copied();
    let digit_at = |i: usize| at(i).is_some_and(|c| c.is_ascii_digit());
    let word_at = |i: usize| at(i).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    // The characters start..end (within the text: start <= end <= chars.len()).
    let span = |start: usize, end: usize| -> String {
        chars.get(start..end).unwrap_or_default().iter().collect()
    };
    while let Some(c) = at(i) {
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            while digit_at(i) {
                i += 1;
            }
            let mut float = false;
            if at(i) == Some('.') && digit_at(i + 1) {
                float = true;
                i += 1;
                while digit_at(i) {
                    i += 1;
                }
            }
            if matches!(at(i), Some('e' | 'E')) {
                let mut j = i + 1;
                if matches!(at(j), Some('+' | '-')) {
                    j += 1;
                }
                if digit_at(j) {
                    float = true;
                    i = j;
                    while digit_at(i) {
                        i += 1;
                    }
                }
            }
            let s = span(start, i);
            if let Some(next) = at(i).filter(|&n| n.is_alphanumeric() || n == '_') {
                return Err(syntax(
                    col(i),
                    format!("unexpected {next:?} after the number {s}"),
                ));
            }
            if float {
                let v: f64 = s
                    .parse()
                    .map_err(|_| syntax(col(start), format!("{s} is not a number")))?;
                if !v.is_finite() {
                    return Err(syntax(col(start), format!("{s} is out of the f64 range")));
                }
                out.push((Tok::Float(v), col(start)));
            } else {
                let v: u128 = s.parse().map_err(|_| {
                    syntax(col(start), format!("integer {s} does not fit in 128 bits"))
                })?;
                out.push((Tok::Int(v), col(start)));
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            while word_at(i) {
                i += 1;
            }
            out.push((Tok::Word(span(start, i)), col(start)));
            continue;
        }
        if c == '"' {
            let mut s = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(syntax(col(start), "unterminated quoted name")),
                    Some('"') if chars.get(i + 1) == Some(&'"') => {
                        s.push('"');
                        i += 2;
                    }
                    Some('"') => {
                        i += 1;
                        break;
                    }
                    Some(&ch) => {
                        s.push(ch);
                        i += 1;
                    }
                }
            }
            out.push((Tok::Quoted(s), col(start)));
            continue;
        }
        if c == '\'' {
            let mut s = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(syntax(col(start), "unterminated string")),
                    Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                        s.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(&ch) => {
                        s.push(ch);
                        i += 1;
                    }
                }
            }
            out.push((Tok::Str(s), col(start)));
            continue;
        }
        let two = span(i, chars.len().min(i + 2));
        let sym = match two.as_str() {
            "!=" => Some("!="),
            "<>" => Some("<>"),
            "<=" => Some("<="),
            ">=" => Some(">="),
            _ => None,
        };
        if let Some(s) = sym {
            out.push((Tok::Sym(s), col(start)));
            i += 2;
            continue;
        }
        let one = match c {
            '(' => "(",
            ')' => ")",
            ',' => ",",
            '*' => "*",
            '+' => "+",
            '-' => "-",
            '/' => "/",
            '%' => "%",
            '=' => "=",
            '<' => "<",
            '>' => ">",
            ';' => ";",
            _ => return Err(syntax(col(start), format!("unexpected character {c:?}"))),
        };
        out.push((Tok::Sym(one), col(start)));
        i += 1;
    }
    out.push((Tok::End, col(chars.len())));
    Ok(out)
}

/// A parsed node before lowering: conditions and expressions alike.
#[derive(Debug)]
enum Node {
    Int(i128),
    Float(f64),
    Str(String),
    Col(Column),
    Sub(Query),
    Arith(ArithOp, Box<Spanned>, Box<Spanned>),
    Cmp(CmpOp, Box<Spanned>, Box<Spanned>),
    Between(Box<Spanned>, Box<Spanned>, Box<Spanned>, bool),
    In(Box<Spanned>, Vec<Spanned>, bool),
    Like(Box<Spanned>, String, bool),
    And(Box<Spanned>, Box<Spanned>),
    Or(Box<Spanned>, Box<Spanned>),
    Not(Box<Spanned>),
}

/// A node, the column where it starts, and the depth of its tree (subqueries included).
type Spanned = (Node, u32, u32);

/// Deepest tree (operators, conditions and subqueries along one path) the parser builds, so
/// that evaluating, printing and dropping a parsed query stay within a small stack.
pub const MAX_TREE_DEPTH: u32 = 256;

fn depth_of(kids: &[&Spanned]) -> u32 {
    kids.iter().map(|k| k.2).max().unwrap_or(0) + 1
}

/// Builds a node over `kids`, refusing trees deeper than [`MAX_TREE_DEPTH`].
fn mk(n: Node, at: u32, depth: u32) -> Result<Spanned, QueryError> {
    if depth > MAX_TREE_DEPTH {
        return Err(syntax(
            at,
            format!(
                "expression deeper than {MAX_TREE_DEPTH} operators (write long lists as IN (...))"
            ),
        ));
    }
    Ok((n, at, depth))
}

struct Parser {
    toks: Vec<(Tok, u32)>,
    pos: usize,
    depth: usize,
}

impl Parser {
    /// The token `ahead` places after the current one; past the last token, the last one (the
    /// lexer ends every list with [`Tok::End`]).
    fn tok(&self, ahead: usize) -> &(Tok, u32) {
        static END: (Tok, u32) = (Tok::End, 0);
        self.toks
            .get(self.pos.saturating_add(ahead))
            .or(self.toks.last())
            .unwrap_or(&END)
    }
    fn peek(&self) -> &Tok {
        &self.tok(0).0
    }
    fn peek2(&self) -> &Tok {
        &self.tok(1).0
    }
    fn col(&self) -> u32 {
        self.tok(0).1
    }
    fn bump(&mut self) -> (Tok, u32) {
        let t = self.tok(0).clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn is_word(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Word(w) if w.eq_ignore_ascii_case(kw))
    }
    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Sym(x) if *x == s)
    }
    fn unexpected(&self, expected: &str) -> QueryError {
        syntax(
            self.col(),
            format!("expected {expected}, found {}", self.peek().describe()),
        )
    }
    fn expect_word(&mut self, kw: &str) -> Result<(), QueryError> {
        if self.is_word(kw) {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(kw))
        }
    }
    fn expect_sym(&mut self, s: &str) -> Result<(), QueryError> {
        if self.is_sym(s) {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{s}'")))
        }
    }
    /// "expected a column", with a suggestion for a misspelt one (`keys`, `value`).
    fn unexpected_column(&self) -> QueryError {
        if let Tok::Word(w) = self.peek() {
            let hint =
                did_you_mean(w, &["key", "record"]).or(match w.to_ascii_lowercase().as_str() {
                    "value" | "val" | "v" => Some("record"),
                    "k" | "id" => Some("key"),
                    _ => None,
                });
            if let Some(h) = hint {
                return syntax(
                    self.col(),
                    format!(
                        "unknown column {w} (did you mean {h}?); the columns are key and record"
                    ),
                );
            }
        }
        self.unexpected("a column (key or record)")
    }

    fn enter(&mut self) -> Result<(), QueryError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(syntax(
                self.col(),
                format!("nested more than {MAX_NESTING} levels deep"),
            ));
        }
        Ok(())
    }

    fn query(&mut self) -> Result<Query, QueryError> {
        Ok(self.query_depth()?.0)
    }

    /// A query and the depth of its condition's tree.
    fn query_depth(&mut self) -> Result<(Query, u32), QueryError> {
        self.enter()?;
        self.expect_word("SELECT")?;
        let mut q = Query::from_db(String::new());
        let mut pending = Vec::new();
        loop {
            self.select_item(&mut q, &mut pending)?;
            if !self.is_sym(",") {
                break;
            }
            self.bump();
        }
        if !self.is_word("FROM") {
            if let Tok::Word(w) = self.peek() {
                if let Some(h) = did_you_mean(w, &["FROM", "AS"]) {
                    return Err(syntax(
                        self.col(),
                        format!("expected FROM, found name {w} (did you mean {h}?)"),
                    ));
                }
            }
        }
        self.expect_word("FROM")?;
        q.db = match self.bump() {
            (Tok::Word(w), _) if !is_keyword(&w) => w,
            (Tok::Quoted(w), _) => w,
            (t, c) => {
                let hint = match &t {
                    Tok::Word(w) => format!(" (write it quoted: \"{w}\")"),
                    _ => String::new(),
                };
                return Err(syntax(
                    c,
                    format!("expected a database name, found {}{hint}", t.describe()),
                ));
            }
        };
        let (filter, depth) = if self.is_word("WHERE") {
            self.bump();
            let n = self.or()?;
            let d = n.2;
            (Some(lower_pred(n)?), d)
        } else {
            (None, 0)
        };
        q.filter = filter;
        if self.is_word("GROUP") {
            self.bump();
            self.expect_word("BY")?;
            let at = self.col();
            let g = self.group_expr()?;
            match g {
                Some(g) => q.group_by = Some(g),
                None => return Err(syntax(at, "GROUP BY takes key / N or record")),
            }
        }
        // The SELECT list's columns, now that the grouping is known.
        for (i, (it, n, at)) in pending.into_iter().enumerate() {
            let item = match (it, q.group_by) {
                (Item::Key, Some(GroupBy::KeyDiv(n))) => {
                    return Err(type_err(
                        at,
                        format!("key is not grouped: select key / {n} (the bucket) or key / {n} * {n} (its first key)"),
                    ))
                }
                (Item::Record, Some(GroupBy::Record)) => Item::Group,
                (Item::Record, Some(g)) => {
                    return Err(type_err(
                        at,
                        format!("record is not grouped (GROUP BY {g}): aggregate it, such as AVG(record)"),
                    ))
                }
                (Item::Group | Item::BucketStart, g) if g != Some(GroupBy::KeyDiv(n)) => {
                    return Err(type_err(
                        at,
                        format!("key / {n} in the SELECT list needs GROUP BY key / {n}"),
                    ))
                }
                (it, _) => it,
            };
            if let Some(s) = q.select.get_mut(i) {
                s.item = item;
            }
        }
        if self.is_word("ORDER") {
            self.bump();
            self.expect_word("BY")?;
            let at = self.col();
            let ok = if self.is_word("KEY") && !matches!(self.peek2(), Tok::Sym("/")) {
                self.bump();
                q.group_by != Some(GroupBy::Record)
            } else {
                let g = self.group_expr()?;
                g.is_some() && g == q.group_by
            };
            if !ok {
                return Err(type_err(
                    at,
                    match q.group_by {
                        Some(g) => format!("a grouped query is ordered by its group ({g})"),
                        None => "rows are ordered by key".into(),
                    },
                ));
            }
            if self.is_word("ASC") {
                self.bump();
            } else if self.is_word("DESC") {
                self.bump();
                q.descending = true;
            }
        }
        if self.is_word("LIMIT") {
            self.bump();
            q.limit = Some(self.count("LIMIT")?);
        }
        if self.is_word("OFFSET") {
            self.bump();
            q.offset = self.count("OFFSET")?;
        }
        if q.select
            .iter()
            .all(|s| matches!(s.item, Item::Agg(_)) && s.alias.is_none())
        {
            // Aggregates alone, unnamed: the plain form built in code.
            q.select.clear();
        }
        self.depth -= 1;
        Ok((q, depth))
    }

    /// A non-negative integer after LIMIT or OFFSET.
    fn count(&mut self, what: &str) -> Result<u64, QueryError> {
        match self.bump() {
            (Tok::Int(v), c) => {
                u64::try_from(v).map_err(|_| syntax(c, format!("{v} is larger than a u64")))
            }
            (t, c) => Err(syntax(
                c,
                format!("{what} takes a count (an integer), found {}", t.describe()),
            )),
        }
    }

    /// `key / N` or `record` (`None`: something else, nothing consumed but `key`).
    fn group_expr(&mut self) -> Result<Option<GroupBy>, QueryError> {
        if self.is_word("RECORD") {
            self.bump();
            return Ok(Some(GroupBy::Record));
        }
        if !self.is_word("KEY") {
            return Ok(None);
        }
        self.bump();
        if !self.is_sym("/") {
            return Ok(None);
        }
        self.bump();
        Ok(Some(GroupBy::KeyDiv(self.bucket_width()?)))
    }

    fn bucket_width(&mut self) -> Result<u64, QueryError> {
        match self.bump() {
            (Tok::Int(v), c) => match u64::try_from(v) {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(syntax(
                    c,
                    format!("a bucket width is an integer from 1 to {}", u64::MAX),
                )),
            },
            (t, c) => Err(syntax(
                c,
                format!(
                    "key / N takes a constant bucket width N, found {}",
                    t.describe()
                ),
            )),
        }
    }

    /// One item of the SELECT list, into `q` (a placeholder for columns, resolved once the
    /// GROUP BY is known, in `pending`: the item, its bucket width, its column).
    fn select_item(
        &mut self,
        q: &mut Query,
        pending: &mut Vec<(Item, u64, u32)>,
    ) -> Result<(), QueryError> {
        let at = self.col();
        let mut push = |q: &mut Query, item: Item, n: u64| {
            q.select.push(SelectItem { item, alias: None });
            pending.push((item, n, at));
        };
        if self.is_sym("*") {
            self.bump();
            push(q, Item::Key, 0);
            push(q, Item::Record, 0);
            return Ok(());
        }
        if self.is_word("KEY") {
            self.bump();
            if self.is_sym("/") {
                self.bump();
                let n = self.bucket_width()?;
                let mut item = Item::Group;
                if self.is_sym("*") {
                    self.bump();
                    let c = self.col();
                    if self.bucket_width()? != n {
                        return Err(syntax(
                            c,
                            format!("the first key of a bucket is key / {n} * {n}"),
                        ));
                    }
                    item = Item::BucketStart;
                }
                push(q, item, n);
            } else {
                push(q, Item::Key, 0);
            }
        } else if self.is_word("RECORD") {
            self.bump();
            push(q, Item::Record, 0);
        } else {
            let a = self.aggregate()?;
            q.aggregates.push(a);
            let i = q.aggregates.len() - 1;
            push(q, Item::Agg(i), 0);
        }
        if self.is_word("AS") {
            self.bump();
            let alias = match self.bump() {
                (Tok::Word(w), _) if !is_keyword(&w) => w,
                (Tok::Quoted(w), _) => w,
                (t, c) => {
                    return Err(syntax(
                        c,
                        format!("expected a column name after AS, found {}", t.describe()),
                    ))
                }
            };
            if let Some(s) = q.select.last_mut() {
                s.alias = Some(alias);
            }
        }
        Ok(())
    }

    fn column(&mut self) -> Result<Column, QueryError> {
        let c = if self.is_word("KEY") {
            Column::Key
        } else if self.is_word("RECORD") {
            Column::Record
        } else {
            return Err(self.unexpected_column());
        };
        self.bump();
        Ok(c)
    }

    fn aggregate(&mut self) -> Result<Aggregate, QueryError> {
        let at = self.col();
        let name = match self.peek() {
            Tok::Word(w) => w.to_ascii_uppercase(),
            _ => String::new(),
        };
        let func = match name.as_str() {
            "COUNT" => {
                self.bump();
                self.expect_sym("(")?;
                let f = if self.is_sym("*") {
                    self.bump();
                    AggFunc::CountStar
                } else if self.is_word("DISTINCT") {
                    self.bump();
                    AggFunc::CountDistinct(self.column()?)
                } else {
                    AggFunc::Count(self.column()?)
                };
                self.expect_sym(")")?;
                f
            }
            "SUM" | "AVG" | "MIN" | "MAX" => {
                self.bump();
                self.expect_sym("(")?;
                let c = self.column()?;
                self.expect_sym(")")?;
                match name.as_str() {
                    "SUM" => AggFunc::Sum(c),
                    "AVG" => AggFunc::Avg(c),
                    "MIN" => AggFunc::Min(c),
                    _ => AggFunc::Max(c),
                }
            }
            "TOP" | "BOTTOM" => {
                self.bump();
                self.expect_sym("(")?;
                let k = match self.bump() {
                    (Tok::Int(v), c) => u64::try_from(v)
                        .map_err(|_| syntax(c, format!("{v} is larger than a u64")))?,
                    (t, c) => {
                        return Err(syntax(
                            c,
                            format!("expected a count (an integer), found {}", t.describe()),
                        ))
                    }
                };
                let c = if self.is_sym(",") {
                    self.bump();
                    self.column()?
                } else {
                    Column::Key
                };
                self.expect_sym(")")?;
                if name == "TOP" {
                    AggFunc::Top(k, c)
                } else {
                    AggFunc::Bottom(k, c)
                }
            }
            _ => {
                const AGGS: &[&str] = &["COUNT", "SUM", "AVG", "MIN", "MAX", "TOP", "BOTTOM"];
                let hint = match self.peek() {
                    Tok::Word(w) if w.eq_ignore_ascii_case("AVERAGE") => Some("AVG"),
                    Tok::Word(w) => did_you_mean(w, AGGS),
                    _ => None,
                };
                let what = "an aggregate (COUNT, SUM, AVG, MIN, MAX, TOP or BOTTOM), a column \
                            (key, record, key / N) or *";
                return Err(match hint {
                    Some(h) => syntax(
                        self.col(),
                        format!(
                            "expected {what}, found {} (did you mean {h}?)",
                            self.peek().describe()
                        ),
                    ),
                    None => self.unexpected(what),
                });
            }
        };
        Ok(Aggregate {
            func,
            at: At(Some(at)),
        })
    }

    fn or(&mut self) -> Result<Spanned, QueryError> {
        let mut l = self.and()?;
        while self.is_word("OR") {
            self.bump();
            let r = self.and()?;
            let (at, d) = (l.1, depth_of(&[&l, &r]));
            l = mk(Node::Or(Box::new(l), Box::new(r)), at, d)?;
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Spanned, QueryError> {
        let mut l = self.not()?;
        while self.is_word("AND") {
            self.bump();
            let r = self.not()?;
            let (at, d) = (l.1, depth_of(&[&l, &r]));
            l = mk(Node::And(Box::new(l), Box::new(r)), at, d)?;
        }
        Ok(l)
    }

    fn not(&mut self) -> Result<Spanned, QueryError> {
        if self.is_word("NOT") {
            let at = self.col();
            self.bump();
            self.enter()?;
            let p = self.not()?;
            self.depth -= 1;
            let d = depth_of(&[&p]);
            return mk(Node::Not(Box::new(p)), at, d);
        }
        self.test()
    }

    fn test(&mut self) -> Result<Spanned, QueryError> {
        let l = self.sum()?;
        let op = match self.peek() {
            Tok::Sym("=") => Some(CmpOp::Eq),
            Tok::Sym("!=") | Tok::Sym("<>") => Some(CmpOp::Ne),
            Tok::Sym("<") => Some(CmpOp::Lt),
            Tok::Sym("<=") => Some(CmpOp::Le),
            Tok::Sym(">") => Some(CmpOp::Gt),
            Tok::Sym(">=") => Some(CmpOp::Ge),
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            let r = self.sum()?;
            let (at, d) = (l.1, depth_of(&[&l, &r]));
            return mk(Node::Cmp(op, Box::new(l), Box::new(r)), at, d);
        }
        let negated = self.is_word("NOT")
            && matches!(self.peek2(), Tok::Word(w)
                if w.eq_ignore_ascii_case("BETWEEN") || w.eq_ignore_ascii_case("IN")
                    || w.eq_ignore_ascii_case("LIKE"));
        if negated {
            self.bump();
        }
        if self.is_word("LIKE") {
            self.bump();
            let pat = match self.bump() {
                (Tok::Str(p), _) => p,
                (t, c) => {
                    return Err(syntax(
                        c,
                        format!(
                            "LIKE takes a pattern string ('abc%'), found {}",
                            t.describe()
                        ),
                    ))
                }
            };
            let (at, d) = (l.1, depth_of(&[&l]) + 1);
            return mk(Node::Like(Box::new(l), pat, negated), at, d);
        }
        if self.is_word("BETWEEN") {
            self.bump();
            let lo = self.sum()?;
            self.expect_word("AND")?;
            let hi = self.sum()?;
            let (at, d) = (l.1, depth_of(&[&l, &lo, &hi]) + 1);
            return mk(
                Node::Between(Box::new(l), Box::new(lo), Box::new(hi), negated),
                at,
                d,
            );
        }
        if self.is_word("IN") {
            self.bump();
            self.expect_sym("(")?;
            let mut list = Vec::new();
            if !self.is_sym(")") {
                list.push(self.sum()?);
                while self.is_sym(",") {
                    self.bump();
                    list.push(self.sum()?);
                }
            }
            self.expect_sym(")")?;
            let at = l.1;
            let mut kids: Vec<&Spanned> = list.iter().collect();
            kids.push(&l);
            let d = depth_of(&kids) + 1;
            return mk(Node::In(Box::new(l), list, negated), at, d);
        }
        Ok(l)
    }

    fn sum(&mut self) -> Result<Spanned, QueryError> {
        let mut l = self.product()?;
        loop {
            let op = match self.peek() {
                Tok::Sym("+") => ArithOp::Add,
                Tok::Sym("-") => ArithOp::Sub,
                _ => return Ok(l),
            };
            self.bump();
            let r = self.product()?;
            let (at, d) = (l.1, depth_of(&[&l, &r]));
            l = mk(Node::Arith(op, Box::new(l), Box::new(r)), at, d)?;
        }
    }

    fn product(&mut self) -> Result<Spanned, QueryError> {
        let mut l = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Sym("*") => ArithOp::Mul,
                Tok::Sym("/") => ArithOp::Div,
                Tok::Sym("%") => ArithOp::Rem,
                _ => return Ok(l),
            };
            self.bump();
            let r = self.unary()?;
            let (at, d) = (l.1, depth_of(&[&l, &r]));
            l = mk(Node::Arith(op, Box::new(l), Box::new(r)), at, d)?;
        }
    }

    fn unary(&mut self) -> Result<Spanned, QueryError> {
        if !self.is_sym("-") {
            return self.primary();
        }
        let at = self.col();
        self.bump();
        // A minus directly before a literal is part of it (so `-5` is Int(-5), and i128::MIN
        // can be written).
        match self.peek().clone() {
            Tok::Int(v) => {
                self.bump();
                let n = 0i128
                    .checked_sub_unsigned(v)
                    .ok_or_else(|| syntax(at, format!("integer -{v} does not fit in 128 bits")))?;
                Ok((Node::Int(n), at, 1))
            }
            Tok::Float(v) => {
                self.bump();
                Ok((Node::Float(-v), at, 1))
            }
            _ => {
                self.enter()?;
                let x = self.unary()?;
                self.depth -= 1;
                let d = depth_of(&[&x]);
                mk(
                    Node::Arith(ArithOp::Sub, Box::new((Node::Int(0), at, 1)), Box::new(x)),
                    at,
                    d,
                )
            }
        }
    }

    fn primary(&mut self) -> Result<Spanned, QueryError> {
        let at = self.col();
        match self.peek().clone() {
            Tok::Int(v) => {
                self.bump();
                let n = i128::try_from(v)
                    .map_err(|_| syntax(at, format!("integer {v} does not fit in 128 bits")))?;
                Ok((Node::Int(n), at, 1))
            }
            Tok::Float(v) => {
                self.bump();
                Ok((Node::Float(v), at, 1))
            }
            Tok::Str(v) => {
                self.bump();
                Ok((Node::Str(v), at, 1))
            }
            Tok::Word(w) if w.eq_ignore_ascii_case("KEY") => {
                self.bump();
                Ok((Node::Col(Column::Key), at, 1))
            }
            Tok::Word(w) if w.eq_ignore_ascii_case("RECORD") => {
                self.bump();
                Ok((Node::Col(Column::Record), at, 1))
            }
            Tok::Sym("(") => {
                self.bump();
                self.enter()?;
                let n = if self.is_word("SELECT") {
                    let (q, d) = self.query_depth()?;
                    mk(Node::Sub(q), at, d + 1)?
                } else {
                    self.or()?
                };
                self.depth -= 1;
                self.expect_sym(")")?;
                Ok(n)
            }
            Tok::Word(w) if !is_keyword(&w) && did_you_mean(&w, &["key", "record"]).is_some() => {
                Err(self.unexpected_column())
            }
            _ => Err(self.unexpected("a value (a number, a string, key, record or a subquery)")),
        }
    }
}

fn type_err(at: u32, what: impl Into<String>) -> QueryError {
    QueryError::Type {
        at: Some(at),
        what: what.into(),
    }
}

fn lower_pred((n, at, _): Spanned) -> Result<Pred, QueryError> {
    Ok(match n {
        Node::And(a, b) => Pred::And(Box::new(lower_pred(*a)?), Box::new(lower_pred(*b)?)),
        Node::Or(a, b) => Pred::Or(Box::new(lower_pred(*a)?), Box::new(lower_pred(*b)?)),
        Node::Not(p) => Pred::Not(Box::new(lower_pred(*p)?)),
        Node::Cmp(op, l, r) => match (*l, *r) {
            ((Node::Col(col), _, _), v) => Pred::Cmp {
                col,
                op,
                value: lower_expr(v)?,
                at: At(Some(at)),
            },
            (v, (Node::Col(col), _, _)) => Pred::Cmp {
                col,
                op: op.swapped(),
                value: lower_expr(v)?,
                at: At(Some(at)),
            },
            _ => {
                return Err(type_err(
                    at,
                    "a comparison needs a column (key or record) on one side and a constant \
                     expression on the other",
                ))
            }
        },
        Node::Between(x, lo, hi, negated) => {
            let col = column_of(*x, "BETWEEN")?;
            let p = Pred::Between {
                col,
                lo: lower_expr(*lo)?,
                hi: lower_expr(*hi)?,
                at: At(Some(at)),
            };
            if negated {
                Pred::Not(Box::new(p))
            } else {
                p
            }
        }
        Node::Like(x, pattern, negated) => {
            let col = column_of(*x, "LIKE")?;
            let p = Pred::Like {
                col,
                pattern,
                at: At(Some(at)),
            };
            if negated {
                Pred::Not(Box::new(p))
            } else {
                p
            }
        }
        Node::In(x, list, negated) => {
            let col = column_of(*x, "IN")?;
            let p = Pred::In {
                col,
                list: list.into_iter().map(lower_expr).collect::<Result<_, _>>()?,
                at: At(Some(at)),
            };
            if negated {
                Pred::Not(Box::new(p))
            } else {
                p
            }
        }
        _ => {
            return Err(type_err(
                at,
                "expected a condition (such as key > 5), found a value",
            ))
        }
    })
}

fn column_of((n, at, _): Spanned, what: &str) -> Result<Column, QueryError> {
    match n {
        Node::Col(c) => Ok(c),
        _ => Err(type_err(
            at,
            format!("{what} needs a column (key or record) on its left"),
        )),
    }
}

fn lower_expr((n, at, _): Spanned) -> Result<Expr, QueryError> {
    Ok(match n {
        Node::Int(v) => Expr::Int(v),
        Node::Float(v) => Expr::Float(v),
        Node::Str(v) => Expr::Str(v),
        Node::Sub(q) => Expr::Subquery(Box::new(q)),
        Node::Arith(op, l, r) => Expr::Bin {
            op,
            l: Box::new(lower_expr(*l)?),
            r: Box::new(lower_expr(*r)?),
            at: At(Some(at)),
        },
        Node::Col(c) => {
            return Err(type_err(
                at,
                format!(
                    "the column {c} can only be compared with a constant, not used in \
                     arithmetic or compared with a column"
                ),
            ))
        }
        _ => return Err(type_err(at, "expected a value, found a condition")),
    })
}

impl Query {
    /// Parses the text of a query.
    pub fn parse(text: &str) -> Result<Query, QueryError> {
        let mut p = Parser {
            toks: lex(text)?,
            pos: 0,
            depth: 0,
        };
        let q = p.query()?;
        if p.is_sym(";") {
            p.bump();
        }
        if *p.peek() != Tok::End {
            return Err(p.unexpected("the end of the query"));
        }
        // Printing parenthesises every operation: refuse what would print too deep to parse.
        if q.print_nesting() > MAX_NESTING {
            return Err(syntax(
                1,
                format!(
                    "nested more than {MAX_NESTING} levels deep once every operation is in \
                     parentheses"
                ),
            ));
        }
        Ok(q)
    }
}

impl std::str::FromStr for Query {
    type Err = QueryError;
    fn from_str(s: &str) -> Result<Query, QueryError> {
        Query::parse(s)
    }
}

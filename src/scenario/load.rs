//! Reading a scenario: TOML text (or a JSON document) in, a checked and
//! fully defaulted document out, every error naming its key and, where the
//! value came from the scenario's text, its line and column.
//!
//! The checks are the JSON Schema's ([`super::schema`], generated from the
//! serde types): this module walks it over the value tree, so a range or
//! choice declared once on a type (a schemars attribute) is enforced here and
//! printed by `idlewave schema` alike. It also layers the platform file or
//! preset under `[network]` and `--set` overrides over the file, fills in
//! defaults (and the inheritance of `x-inherit` tables) and resolves file
//! paths against the scenario's directory. The rules that tie keys together
//! are the types' own `validate` methods, run on the typed [`Scenario`].

use super::{Scenario, ScenarioError};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Byte range of a value in the scenario's text.
pub type Span = (usize, usize);

/// A value as read, with where it was written (None: not from the scenario's
/// text, e.g. a platform file's key, an override or a Python dict).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub span: Option<Span>,
    pub v: Val,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Datetime(String),
    Array(Vec<Node>),
    Table(Vec<(String, Node)>),
}

impl Node {
    fn new(v: Val) -> Self {
        Node { span: None, v }
    }

    fn get(&self, key: &str) -> Option<&Node> {
        match &self.v {
            Val::Table(t) => t.iter().find(|(k, _)| k == key).map(|(_, n)| n),
            _ => None,
        }
    }

    /// From a JSON value (no spans).
    pub fn from_json(v: &Value) -> Node {
        Node::new(match v {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Val::Int(i as i128),
                (_, Some(u)) => Val::Int(u as i128),
                _ => Val::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Val::Str(s.clone()),
            Value::Array(a) => Val::Array(a.iter().map(Node::from_json).collect()),
            Value::Object(o) => Val::Table(o.iter().map(|(k, v)| (k.clone(), Node::from_json(v))).collect()),
        })
    }
}

// toml hands a datetime over as a one-key table under this name
const TOML_DATETIME: &str = "$__toml_private_datetime";

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = toml::Spanned::<Val>::deserialize(d)?;
        let span = s.span();
        Ok(Node { span: Some((span.start, span.end)), v: s.into_inner() })
    }
}

impl<'de> Deserialize<'de> for Val {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Val;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a TOML value")
            }
            fn visit_bool<E>(self, b: bool) -> Result<Val, E> {
                Ok(Val::Bool(b))
            }
            fn visit_i64<E>(self, i: i64) -> Result<Val, E> {
                Ok(Val::Int(i as i128))
            }
            fn visit_u64<E>(self, i: u64) -> Result<Val, E> {
                Ok(Val::Int(i as i128))
            }
            fn visit_f64<E>(self, x: f64) -> Result<Val, E> {
                Ok(Val::Float(x))
            }
            fn visit_str<E>(self, s: &str) -> Result<Val, E> {
                Ok(Val::Str(s.into()))
            }
            fn visit_string<E>(self, s: String) -> Result<Val, E> {
                Ok(Val::Str(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Val, A::Error> {
                let mut out = Vec::new();
                while let Some(n) = a.next_element::<Node>()? {
                    out.push(n);
                }
                Ok(Val::Array(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Val, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = a.next_key::<String>()? {
                    if k == TOML_DATETIME {
                        return Ok(Val::Datetime(a.next_value::<String>()?));
                    }
                    let n = a.next_value::<Node>()?;
                    out.push((k, n));
                }
                Ok(Val::Table(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Line and column (1-based, columns in characters) of a byte offset.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// Where errors point: the source's name and text (for line:column).
pub struct Origin<'a> {
    pub source: &'a str,
    pub text: Option<&'a str>,
    pub base_dir: &'a Path,
}

impl Origin<'_> {
    fn error(&self, key: &str, span: Option<Span>, kind: ErrorKind, message: String) -> ScenarioError {
        let (line, column) = match (span, self.text) {
            (Some((at, _)), Some(text)) => {
                let (l, c) = line_col(text, at);
                (Some(l), Some(c))
            }
            _ => (None, None),
        };
        ScenarioError { source_name: self.source.into(), key: key.into(), line, column, kind, message }
    }

    /// A path as written, resolved against the scenario's directory.
    pub fn resolve(&self, p: &str) -> String {
        resolve_path(self.base_dir, p)
    }
}

/// What went wrong, by kind (the message says it in words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file could not be read.
    Read,
    /// Not TOML.
    Syntax,
    UnknownKey,
    MissingKey,
    /// A value of the wrong type.
    Type,
    /// Out of range, or not one of the choices.
    Value,
    /// The platform file or preset named in `network.platform`.
    Platform,
    /// A `--set` override that cannot be applied.
    Override,
    /// A rule tying keys together.
    Rule,
    /// What a key asks for would not fit in memory (raised in Python as
    /// MemoryLimitError, with the key).
    Memory,
}

impl ErrorKind {
    /// Its name in snake case, as Python sees it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Read => "read",
            ErrorKind::Syntax => "syntax",
            ErrorKind::UnknownKey => "unknown_key",
            ErrorKind::MissingKey => "missing_key",
            ErrorKind::Type => "type",
            ErrorKind::Value => "value",
            ErrorKind::Platform => "platform",
            ErrorKind::Override => "override",
            ErrorKind::Rule => "rule",
            ErrorKind::Memory => "memory",
        }
    }
}

/// `p` with `~` expanded, made absolute against `base` and normalised
/// lexically (as Python's os.path.normpath(os.path.abspath(...))).
pub fn resolve_path(base: &Path, p: &str) -> String {
    let expanded = match (p.strip_prefix('~'), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => PathBuf::from(home).join(rest.trim_start_matches('/')),
        _ => PathBuf::from(p),
    };
    let mut path = if expanded.is_absolute() { expanded } else { base.join(expanded) };
    if !path.is_absolute() {
        path = std::env::current_dir().unwrap_or_default().join(path);
    }
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
            _ => {}
        }
    }
    out.to_string_lossy().into_owned()
}

/// Reads TOML text into a value tree with spans.
pub fn read_toml(text: &str, source: &str) -> Result<Node, ScenarioError> {
    toml::from_str::<Node>(text)
        .map(|mut n| {
            n.span = None; // the root table is the whole file
            n
        })
        .map_err(|e| {
            let (line, column) = match e.span() {
                Some(s) => {
                    let (l, c) = line_col(text, s.start);
                    (Some(l), Some(c))
                }
                None => (None, None),
            };
            ScenarioError {
                source_name: source.into(),
                key: String::new(),
                line,
                column,
                kind: ErrorKind::Syntax,
                message: toml_message(e.message()),
            }
        })
}

/// The TOML reader's message in the user's words: an integer beyond 64 bits
/// is named as such (the reader says "as i128"), and nesting past its limit
/// (arrays in arrays, or a header of thousands of dotted keys) says so.
fn toml_message(m: &str) -> String {
    let m = m.trim_end();
    if m.contains("recurs") {
        return "TOML nested too deeply to read".into();
    }
    if let Some(n) = m.strip_prefix("invalid type: integer `").and_then(|r| r.split_once("` as i128")).map(|(n, _)| n) {
        return format!("integer {n} is too large: a TOML integer is at most 9223372036854775807 (2^63 - 1)");
    }
    format!("TOML syntax error: {m}")
}

// ------------------------------------------------------------------ platforms

/// The platform presets (python/idlewave/platforms), compiled in.
pub const PRESETS: &[(&str, &str)] = &[
    ("anvil", include_str!("../../python/idlewave/platforms/anvil.toml")),
    ("blue_waters", include_str!("../../python/idlewave/platforms/blue_waters.toml")),
    ("generic_ib", include_str!("../../python/idlewave/platforms/generic_ib.toml")),
    ("meggie", include_str!("../../python/idlewave/platforms/meggie.toml")),
    ("piz_daint", include_str!("../../python/idlewave/platforms/piz_daint.toml")),
    ("supermuc_ng", include_str!("../../python/idlewave/platforms/supermuc_ng.toml")),
];

fn preset(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The [network] table of a preset or platform file, and where it came from.
fn load_platform(name: &str, resolve: &dyn Fn(&str) -> String) -> Result<(Node, String), String> {
    let (text, where_) = match preset(name) {
        Some(t) => (t.to_string(), format!("<preset {name}>")),
        None => {
            let path = resolve(name);
            if !Path::new(&path).exists() {
                let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
                return Err(format!("'{name}' is neither a preset ({}) nor a readable file", names.join(", ")));
            }
            (crate::files::read_text(&path, "platform file")?, path)
        }
    };
    let data = read_toml(&text, &where_).map_err(|e| e.to_string())?;
    let Val::Table(mut top) = data.v else { unreachable!("a TOML document is a table") };
    let Some(i) = top.iter().position(|(k, _)| k == "network") else {
        let network = Node::new(Val::Table(top));
        return Ok((checked_alone(network, &text, &where_, preset(name).is_none())?, where_));
    };
    let (_, mut network) = top.remove(i);
    let outside: Vec<String> = top.iter().map(|(k, _)| k.clone()).collect();
    if outside == ["platform"] && matches!(network.v, Val::Table(_)) && network.get("platform").is_none() {
        // the file's own base platform, written above [network]
        if let Val::Table(t) = &mut network.v {
            t.push(top.remove(0));
        }
    } else if !outside.is_empty() {
        let mut sorted = outside;
        sorted.sort();
        return Err(format!("{where_}: {}: a platform file's keys belong in [network] (or all at top level)", sorted.join(", ")));
    }
    Ok((checked_alone(network, &text, &where_, preset(name).is_none())?, where_))
}

/// A platform file's [network] keys, checked against the schema on their
/// own (`check`: a user's file) so that a mistake is reported at the file's
/// own line, then without their lines: merged into the scenario, they are
/// not the scenario's lines.
fn checked_alone(mut network: Node, text: &str, source: &str, check: bool) -> Result<Node, String> {
    if check {
        static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        let schema = SCHEMA.get_or_init(super::schema);
        let base_dir = Path::new(source).parent().unwrap_or(Path::new("."));
        let origin = Origin { source, text: Some(text), base_dir };
        let mut w = Walker { defs: &schema["$defs"], origin: &origin, spans: HashMap::new() };
        w.value(&network, &schema["properties"]["network"], "network", None, None).map_err(|e| e.to_string())?;
    }
    strip_spans(&mut network);
    Ok(network)
}

fn strip_spans(n: &mut Node) {
    n.span = None;
    match &mut n.v {
        Val::Array(a) => a.iter_mut().for_each(strip_spans),
        Val::Table(t) => t.iter_mut().for_each(|(_, n)| strip_spans(n)),
        _ => {}
    }
}

/// A platform file's keys over those of the platform it names in its own
/// `platform` key (a preset, or a file relative to it).
fn inherited(name: &str, resolve: &dyn Fn(&str) -> String, seen: &[String]) -> Result<Node, String> {
    let (mut base, where_) = load_platform(name, resolve)?;
    let parent = match &mut base.v {
        Val::Table(t) => t.iter().position(|(k, _)| k == "platform").map(|i| t.remove(i).1),
        _ => None,
    };
    let Some(parent) = parent else { return Ok(base) };
    let Val::Str(parent) = parent.v else {
        return Err(format!("{where_}: platform: expected a preset name or a file path, got {}", show(&parent)));
    };
    if seen.contains(&where_) {
        let chain: Vec<&str> = seen.iter().map(String::as_str).chain([where_.as_str()]).collect();
        return Err(format!("{where_}: platform files name each other in a cycle ({})", chain.join(" -> ")));
    }
    let here = Path::new(&where_).parent().unwrap_or(Path::new("/")).to_path_buf();
    let mut seen = seen.to_vec();
    seen.push(where_);
    let below = inherited(&parent, &|p| resolve_path(&here, p), &seen)?;
    Ok(merge(below, base))
}

/// `over` on top of `base`, table by table. A table that changes `kind`
/// replaces the one below (its keys belong to another kind).
pub fn merge(base: Node, over: Node) -> Node {
    let (Val::Table(mut out), Val::Table(over_t)) = (base.v.clone(), over.v.clone()) else { return over };
    for (k, v) in over_t {
        match out.iter().position(|(ok, _)| *ok == k) {
            Some(i) => {
                let old = &out[i].1;
                let same_kind = match (&v.v, &old.v) {
                    (Val::Table(_), Val::Table(_)) => v.get("kind").or(old.get("kind")).map(|n| &n.v) == old.get("kind").map(|n| &n.v),
                    _ => false,
                };
                out[i].1 = if same_kind { merge(old.clone(), v) } else { v };
            }
            None => out.push((k, v)),
        }
    }
    Node { span: over.span.or(base.span), v: Val::Table(out) }
}

/// Overrides (dotted key -> value) on top of `raw`.
pub fn apply_overrides(raw: &mut Node, overrides: &[(String, Node)], origin: &Origin) -> Result<(), ScenarioError> {
    for (key, value) in overrides {
        if key.is_empty() {
            return Err(origin.error("overrides", None, ErrorKind::Override, "keys must be non-empty strings, got ''".into()));
        }
        let parts: Vec<&str> = key.split('.').collect();
        let (last, parents) = parts.split_last().expect("split gives one part at least");
        let mut table = &mut *raw;
        for (i, part) in parents.iter().enumerate() {
            let Val::Table(t) = &mut table.v else { unreachable!("checked below") };
            let at = match t.iter().position(|(k, _)| k == part) {
                Some(at) => at,
                None => {
                    t.push((part.to_string(), Node::new(Val::Table(Vec::new()))));
                    t.len() - 1
                }
            };
            let sub = &mut t[at].1;
            if !matches!(sub.v, Val::Table(_)) {
                let path = parts[..=i].join(".");
                return Err(origin.error(&path, sub.span, ErrorKind::Override, format!("cannot override '{key}': {path} is not a table")));
            }
            table = sub;
        }
        let Val::Table(t) = &mut table.v else { unreachable!("a table") };
        match t.iter().position(|(k, _)| k == last) {
            Some(i) => {
                let old = std::mem::replace(&mut t[i].1, Node::new(Val::Null));
                let merged = merge(
                    Node::new(Val::Table(vec![(last.to_string(), old)])),
                    Node::new(Val::Table(vec![(last.to_string(), value.clone())])),
                );
                let Val::Table(mut m) = merged.v else { unreachable!("a table") };
                t[i].1 = m.remove(0).1;
            }
            None => t.push((last.to_string(), value.clone())),
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ the walk

/// Everything the walk learnt: the document, and where each key was written.
pub struct Checked {
    pub doc: Value,
    pub spans: HashMap<String, Span>,
}

/// Checks a value tree against the scenario's schema: the document with
/// every default filled in, or the first error.
pub fn check(mut raw: Node, origin: &Origin) -> Result<Checked, ScenarioError> {
    // generated once: a sweep checks thousands of points
    static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let schema = SCHEMA.get_or_init(super::schema);
    // the platform file or preset under [network]
    if let Some(net) = raw.get("network") {
        if let Some(Node { v: Val::Str(name), span }) = net.get("platform") {
            if !name.is_empty() {
                let (name, span) = (name.clone(), *span);
                let fail = |m: String| origin.error("network.platform", span, ErrorKind::Platform, m);
                let base = inherited(&name, &|p| origin.resolve(p), &[]).map_err(fail)?;
                let Val::Table(t) = &mut raw.v else { unreachable!("has a key") };
                let i = t.iter().position(|(k, _)| k == "network").expect("found above");
                let own = std::mem::replace(&mut t[i].1, Node::new(Val::Null));
                let mut merged = merge(base, own);
                if preset(&name).is_none() {
                    // a file named relative to its scenario: where it is, so that the
                    // checked scenario finds it again wherever it is read (a sweep's workers)
                    if let Val::Table(m) = &mut merged.v {
                        let p = m.iter_mut().find(|(k, _)| k == "platform").expect("the scenario's own key");
                        p.1 = Node { span: p.1.span, v: Val::Str(origin.resolve(&name)) };
                    }
                }
                t[i].1 = merged;
            }
        }
    }
    // `jobs = []` written in a scenario would run [workload]'s default, which
    // nobody asked for; a checked document holds it for "no jobs" (no span)
    if let Some(Node { v: Val::Array(jobs), span: span @ Some(_) }) = raw.get("jobs") {
        if jobs.is_empty() {
            let m = "lists no job: give [[jobs]] tables, or leave jobs out to run [workload]".to_string();
            return Err(origin.error("jobs", *span, ErrorKind::Value, m));
        }
        // a [workload] written beside them would be dropped, even one of default values
        // (a checked document holds the default one, without a span)
        if let Some(Node { span: w @ Some(_), .. }) = raw.get("workload") {
            let m = "give either [workload] or [[jobs]], not both".to_string();
            return Err(origin.error("workload", *w, ErrorKind::Value, m));
        }
    }
    let mut w = Walker { defs: &schema["$defs"], origin, spans: HashMap::new() };
    let doc = w.value(&raw, schema, "", None, None)?;
    Ok(Checked { doc, spans: w.spans })
}

/// A read scenario: typed, as its document (every default filled in), and
/// where each key was written (for errors found later, e.g. by the run's
/// configuration).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub scenario: Scenario,
    pub doc: Value,
    pub spans: HashMap<String, Span>,
}

/// Reads TOML text as a scenario, with overrides (dotted key -> value) over it.
pub fn load(text: &str, source: &str, base_dir: &Path, overrides: &[(String, Node)]) -> Result<Loaded, ScenarioError> {
    let origin = Origin { source, text: Some(text), base_dir };
    let mut raw = read_toml(text, source)?;
    apply_overrides(&mut raw, overrides, &origin)?;
    finish(raw, &origin)
}

/// Checks a value tree: the typed scenario (its rules checked) and its document.
pub fn finish(raw: Node, origin: &Origin) -> Result<Loaded, ScenarioError> {
    let checked = check(raw, origin)?;
    let scenario = super::from_document(&checked.doc).map_err(|e| locate(e, origin, &checked.spans))?;
    Ok(Loaded { scenario, doc: checked.doc, spans: checked.spans })
}

/// A rule's error placed at its key (or the nearest enclosing table written).
pub fn locate(mut e: ScenarioError, origin: &Origin, spans: &HashMap<String, Span>) -> ScenarioError {
    let mut key = e.key.as_str();
    let span = loop {
        if let Some(s) = spans.get(key) {
            break Some(*s);
        }
        match key.rfind(['.', '[']) {
            Some(i) => key = &key[..i],
            None => break None,
        }
    };
    let placed = origin.error(&e.key, span, e.kind, String::new());
    e.source_name = placed.source_name;
    (e.line, e.column) = (placed.line, placed.column);
    e
}

struct Walker<'a> {
    defs: &'a Value,
    origin: &'a Origin<'a>,
    spans: HashMap<String, Span>,
}

const PS_PER_S: f64 = 1e12;

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.into()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Walker<'a> {
    fn fail<T>(&self, path: &str, span: Option<Span>, kind: ErrorKind, msg: String) -> Result<T, ScenarioError> {
        Err(self.origin.error(path, span, kind, msg))
    }

    /// A schema node with its `$ref` followed (sibling keys kept).
    fn deref<'n>(&self, node: &'n Value) -> Cow<'n, Map<String, Value>>
    where
        'a: 'n,
    {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let mut node: Cow<'n, Map<String, Value>> = match node.as_object() {
            Some(m) => Cow::Borrowed(m),
            None => Cow::Borrowed(EMPTY.get_or_init(Map::new)),
        };
        // (borrowed where the node is only a reference: the walk visits the schema's big tables often)
        while let Some(r) = node.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap_or_default();
            let target: &'a Map<String, Value> = self.defs.get(name).and_then(Value::as_object).unwrap_or(EMPTY.get_or_init(Map::new));
            if node.len() == 1 {
                node = Cow::Borrowed(target);
            } else {
                let mut merged = target.clone();
                for (k, v) in node.iter().filter(|(k, _)| *k != "$ref") {
                    merged.insert(k.clone(), v.clone());
                }
                node = Cow::Owned(merged);
            }
        }
        node
    }

    fn type_of(node: &Map<String, Value>) -> Option<&str> {
        node.get("type").and_then(Value::as_str)
    }

    /// kind -> schema of each table of a tagged union.
    fn variants<'n>(&self, node: &'n Map<String, Value>) -> Vec<(String, Cow<'n, Map<String, Value>>)>
    where
        'a: 'n,
    {
        let Some(list) = node.get("oneOf").and_then(Value::as_array) else { return Vec::new() };
        list.iter()
            .map(|v| {
                let v = self.deref(v);
                (v["properties"]["kind"]["const"].as_str().unwrap_or_default().to_string(), v)
            })
            .collect()
    }

    /// The allowed values of a node that is a choice of constants.
    fn choices(&self, node: &Map<String, Value>) -> Option<Vec<Value>> {
        if let Some(e) = node.get("enum").and_then(Value::as_array) {
            return Some(e.clone());
        }
        if let Some(c) = node.get("const") {
            return Some(vec![c.clone()]);
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(list) = node.get(key).and_then(Value::as_array) {
                let parts: Vec<Option<Vec<Value>>> =
                    list.iter().map(|n| self.deref(n)).filter(|n| Self::type_of(n) != Some("null")).map(|n| self.choices(&n)).collect();
                if !parts.is_empty() && parts.iter().all(Option::is_some) {
                    return Some(parts.into_iter().flatten().flatten().collect());
                }
            }
        }
        None
    }

    fn value(
        &mut self,
        v: &Node,
        raw_node: &Value,
        path: &str,
        inherit: Option<&Map<String, Value>>,
        table_span: Option<Span>,
    ) -> Result<Value, ScenarioError> {
        if let Some(s) = v.span {
            self.spans.insert(path.to_string(), s);
        }
        // a value not from the text (an override, a platform file's) has no
        // place of its own; a missing key is placed at its table
        let (span, table_span) = (v.span, v.span.or(table_span));
        let node = self.deref(raw_node);
        let mut nullable = match node.get("type") {
            Some(Value::String(t)) => t == "null",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
            _ => false,
        };
        for key in ["anyOf", "oneOf"] {
            for n in node.get(key).and_then(Value::as_array).into_iter().flatten() {
                nullable |= Self::type_of(&self.deref(n)) == Some("null");
            }
        }
        if v.v == Val::Null && nullable {
            return Ok(Value::Null);
        }
        if let Some(choices) = self.choices(&node) {
            let j = to_json(v);
            if matches!(v.v, Val::Bool(_)) || !choices.iter().any(|c| json_eq(c, &j)) {
                let names: Vec<String> = choices.iter().map(py_str).collect();
                return self.fail(path, span, ErrorKind::Value, format!("must be one of {}; got {}", names.join(", "), show(v)));
            }
            return Ok(j);
        }
        if node.contains_key("oneOf") {
            return self.kinded(v, &node, path, table_span);
        }
        if let Some(list) = node.get("anyOf").and_then(Value::as_array) {
            // an optional table
            let inner = list.iter().find(|n| Self::type_of(&self.deref(n)) != Some("null")).cloned().unwrap_or_default();
            return self.value(v, &inner, path, inherit, table_span);
        }
        let typ = match node.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("").to_string(),
            _ => String::new(),
        };
        match typ.as_str() {
            "object" => self.table(v, &node, path, inherit, None, table_span),
            "array" => self.array(v, &node, path, span),
            _ => self.scalar(v, &typ, &node, path, span),
        }
    }

    fn table(
        &mut self,
        v: &Node,
        node: &Map<String, Value>,
        path: &str,
        inherit: Option<&Map<String, Value>>,
        kind: Option<&str>,
        span: Option<Span>,
    ) -> Result<Value, ScenarioError> {
        let empty = Vec::new();
        let entries = match &v.v {
            Val::Null => &empty,
            Val::Table(t) => t,
            _ => return self.fail(path, span, ErrorKind::Type, format!("expected a table, got {} ({})", show(v), type_name(v))),
        };
        let no_props = Map::new();
        let props = node.get("properties").and_then(Value::as_object).unwrap_or(&no_props);
        if node.get("additionalProperties") == Some(&Value::Bool(false)) {
            for (key, n) in entries {
                if !props.contains_key(key) {
                    let allowed: Vec<&str> = props.keys().map(String::as_str).collect();
                    return self.fail(
                        &join(path, key),
                        n.span.or(span),
                        ErrorKind::UnknownKey,
                        format!("unknown key (allowed: {})", allowed.join(", ")),
                    );
                }
            }
        }
        let mut out = Map::new();
        if let Some(kind) = kind {
            out.insert("kind".into(), Value::String(kind.into()));
        }
        let required: Vec<&str> = node.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        for (key, sub) in props {
            if key == "kind" {
                continue;
            }
            let here = join(path, key);
            if let Some((_, given)) = entries.iter().find(|(k, _)| k == key) {
                let source = sub.get("x-inherit");
                let from = match source {
                    None | Some(Value::Bool(false)) | Some(Value::Null) => None,
                    Some(Value::String(s)) => match out.get(s) {
                        Some(Value::Object(p)) if !p.is_empty() => Some(p.clone()),
                        _ => Some(out.clone()),
                    },
                    Some(_) => Some(out.clone()),
                };
                let x = self.value(given, sub, &here, from.as_ref(), span)?;
                out.insert(key.clone(), x);
            } else if let Some(x) = inherit
                .and_then(|i| i.get(key))
                .filter(|_| !sub.as_object().is_some_and(|s| s.contains_key("x-inherit")) && !self.deref(sub).contains_key("x-inherit"))
            {
                out.insert(key.clone(), x.clone());
            } else if let Some(d) = sub.get("default") {
                out.insert(key.clone(), d.clone());
            } else if required.contains(&key.as_str()) {
                return self.fail(&here, span, ErrorKind::MissingKey, "required key is missing".into());
            } else {
                out.insert(key.clone(), Value::Null);
            }
        }
        Ok(Value::Object(out))
    }

    /// A table whose allowed keys depend on its `kind`.
    fn kinded(&mut self, v: &Node, node: &Map<String, Value>, path: &str, span: Option<Span>) -> Result<Value, ScenarioError> {
        let variants = self.variants(node);
        let kinds: Vec<&str> = variants.iter().map(|(k, _)| k.as_str()).collect();
        let kinds = kinds.join(", ");
        if !matches!(v.v, Val::Null | Val::Table(_)) {
            return self.fail(path, span, ErrorKind::Type, format!("expected a table, got {} ({})", show(v), type_name(v)));
        }
        let given = v.get("kind");
        let here = join(path, "kind");
        let kind = match given {
            Some(k) => match &k.v {
                Val::Str(s) => s.clone(),
                _ => {
                    return self.fail(
                        &here,
                        k.span.or(span),
                        ErrorKind::Type,
                        format!("expected a string, got {} ({})", show(k), type_name(k)),
                    )
                }
            },
            None => match node.get("default").and_then(|d| d.get("kind")).and_then(Value::as_str) {
                Some(k) => k.into(),
                None => return self.fail(&here, span, ErrorKind::MissingKey, format!("required key is missing (one of: {kinds})")),
            },
        };
        let Some((_, variant)) = variants.iter().find(|(k, _)| *k == kind) else {
            return self.fail(
                &here,
                given.and_then(|k| k.span).or(span),
                ErrorKind::Value,
                format!("must be one of {kinds}; got {}", py_repr_str(&kind)),
            );
        };
        if let Some(s) = given.and_then(|k| k.span) {
            self.spans.insert(here, s);
        }
        self.table(v, variant, path, None, Some(&kind), span)
    }

    fn array(&mut self, v: &Node, node: &Map<String, Value>, path: &str, span: Option<Span>) -> Result<Value, ScenarioError> {
        let items = self.deref(node.get("items").unwrap_or(&Value::Null));
        let of_tables = Self::type_of(&items) == Some("object") || items.contains_key("oneOf");
        let list = match &v.v {
            Val::Array(a) => a,
            Val::Table(_) if of_tables => {
                let name = path.rsplit('.').next().unwrap_or(path);
                return self.fail(path, span, ErrorKind::Type, format!("expected an array of tables (write [[{name}]], not [{name}])"));
            }
            _ if of_tables => {
                return self.fail(
                    path,
                    span,
                    ErrorKind::Type,
                    format!("expected an array of tables ([[{path}]]), got {} ({})", show(v), type_name(v)),
                )
            }
            _ => {
                let what = match Self::type_of(&items) {
                    Some("integer") => "integers",
                    Some("number") => "numbers",
                    Some("string") => "strings",
                    _ => "values",
                };
                return self.fail(path, span, ErrorKind::Type, format!("expected a list of {what}, got {} ({})", show(v), type_name(v)));
            }
        };
        let n = list.len() as u64;
        let (lo, hi) = (node.get("minItems").and_then(Value::as_u64), node.get("maxItems").and_then(Value::as_u64));
        match (lo, hi) {
            (Some(lo), Some(hi)) if lo == hi && n != lo => {
                return self.fail(path, span, ErrorKind::Value, format!("must have {lo} entries, got {n}"))
            }
            (Some(lo), _) if n < lo => {
                let entries = if lo == 1 { "entry" } else { "entries" };
                return self.fail(path, span, ErrorKind::Value, format!("needs at least {lo} {entries}, got {n}"));
            }
            (_, Some(hi)) if n > hi => return self.fail(path, span, ErrorKind::Value, format!("takes at most {hi} entries, got {n}")),
            _ => {}
        }
        let items = Value::Object(items.into_owned());
        let mut out = Vec::with_capacity(list.len());
        for (i, x) in list.iter().enumerate() {
            out.push(self.value(x, &items, &format!("{path}[{i}]"), None, span)?);
        }
        if node.get("uniqueItems") == Some(&Value::Bool(true)) {
            for i in 1..out.len() {
                if out[..i].iter().any(|y| json_eq(y, &out[i])) {
                    let at = format!("{path}[{i}]");
                    return self.fail(&at, list[i].span.or(span), ErrorKind::Value, format!("duplicate value {}", py_json(&out[i])));
                }
            }
        }
        Ok(Value::Array(out))
    }

    fn scalar(&mut self, v: &Node, typ: &str, node: &Map<String, Value>, path: &str, span: Option<Span>) -> Result<Value, ScenarioError> {
        let wrong = |what: &str| format!("expected {what}, got {} ({})", show(v), type_name(v));
        match typ {
            "integer" => {
                let Val::Int(i) = v.v else { return self.fail(path, span, ErrorKind::Type, wrong("an integer")) };
                self.bounds(Num::I(i), node, path, span)?;
                Ok(int_json(i))
            }
            "number" => {
                let x = match v.v {
                    Val::Int(i) => Num::I(i),
                    Val::Float(x) => Num::F(x),
                    _ => return self.fail(path, span, ErrorKind::Type, wrong("a number")),
                };
                if !x.f().is_finite() {
                    return self.fail(path, span, ErrorKind::Value, format!("must be finite, got {}", x.repr()));
                }
                self.bounds(x, node, path, span)?;
                Ok(serde_json::Number::from_f64(x.f()).map_or(Value::Null, Value::Number))
            }
            "boolean" => match v.v {
                Val::Bool(b) => Ok(Value::Bool(b)),
                _ => self.fail(path, span, ErrorKind::Type, wrong("a boolean (true or false)")),
            },
            "string" => {
                let Val::Str(s) = &v.v else { return self.fail(path, span, ErrorKind::Type, wrong("a string")) };
                if let Some(p) = node.get("pattern").and_then(Value::as_str) {
                    // the schema's patterns are literal text (no regex engine here)
                    if !s.contains(p) {
                        return self.fail(path, span, ErrorKind::Value, format!("must match {}, got {}", py_repr_str(p), py_repr_str(s)));
                    }
                }
                if node.get("format").and_then(Value::as_str) == Some("path") {
                    if s.is_empty() && node.get("x-optional") == Some(&Value::Bool(true)) {
                        return Ok(Value::String(String::new()));
                    }
                    if s.trim().is_empty() {
                        return self.fail(path, span, ErrorKind::Value, "expected a file path, got an empty string".into());
                    }
                    return Ok(Value::String(self.origin.resolve(s)));
                }
                Ok(Value::String(s.clone()))
            }
            _ => {
                let x = match v.v {
                    Val::Int(i) => Num::I(i),
                    Val::Float(x) => Num::F(x),
                    _ => return Ok(to_json(v)),
                };
                self.bounds(x, node, path, span)?;
                Ok(to_json(v))
            }
        }
    }

    fn bounds(&self, v: Num, node: &Map<String, Value>, path: &str, span: Option<Span>) -> Result<(), ScenarioError> {
        let num = |k: &str| node.get(k).and_then(Num::of);
        let (mut lo, mut hi, above) = (num("minimum"), num("maximum"), num("exclusiveMinimum"));
        let fail = |m: String| self.fail(path, span, ErrorKind::Value, m);
        let format = node.get("format").and_then(Value::as_str);
        if format == Some("seconds") {
            // a time: its own words for its range
            if let Some(a) = above.filter(|a| !v.gt(a)) {
                return fail(format!("must be > {}, got {}", a.repr(), v.repr()));
            }
            if let Some(l) = lo.filter(|l| !v.ge(l)) {
                return fail(format!("must be >= {}, got {}", l.repr(), v.repr()));
            }
            if let Some(h) = hi.filter(|h| v.gt(h)) {
                return fail(format!("too large: {} s exceeds the engine's limit of about {} s (2^60 ps)", v.repr(), g3(h.f())));
            }
            if v.f() > 0.0 && (v.f() * PS_PER_S).round_ties_even() < 1.0 {
                return fail(format!("too small: {} s is below the engine's 1 ps resolution", v.repr()));
            }
            return Ok(());
        }
        let uint_max = match format {
            Some("uint8") => Some(u8::MAX as i128),
            Some("uint16") => Some(u16::MAX as i128),
            Some("uint32") => Some(u32::MAX as i128),
            Some("uint64") => Some(u64::MAX as i128),
            _ => None,
        };
        if let (Some(max), None) = (uint_max, hi) {
            // the integer type's own range
            if matches!(lo, None | Some(Num::I(0))) {
                (lo, hi) = (Some(Num::I(0)), Some(Num::I(max)));
            } else if v.gt(&Num::I(max)) {
                return fail(format!("must be <= {max}, got {}", v.repr()));
            }
        }
        if let Some(a) = above.filter(|a| !v.gt(a)) {
            return fail(format!("must be > {}, got {}", a.repr(), v.repr()));
        }
        if let (Some(l), Some(h)) = (lo, hi) {
            if !v.ge(&l) || v.gt(&h) {
                return fail(format!("must be between {} and {}, got {}", l.repr(), h.repr(), v.repr()));
            }
        }
        if let Some(l) = lo.filter(|l| !v.ge(l)) {
            return fail(format!("must be >= {}, got {}", l.repr(), v.repr()));
        }
        if let Some(h) = hi.filter(|h| v.gt(h)) {
            return fail(format!("must be <= {}, got {}", h.repr(), v.repr()));
        }
        Ok(())
    }
}

/// A number as written: an integer stays exact.
#[derive(Debug, Clone, Copy)]
enum Num {
    I(i128),
    F(f64),
}

impl Num {
    fn of(v: &Value) -> Option<Num> {
        let n = v.as_number()?;
        if n.is_f64() {
            n.as_f64().map(Num::F)
        } else {
            n.as_i64().map(|i| Num::I(i as i128)).or(n.as_u64().map(|u| Num::I(u as i128)))
        }
    }
    fn f(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(x) => x,
        }
    }
    fn gt(&self, o: &Num) -> bool {
        match (self, o) {
            (Num::I(a), Num::I(b)) => a > b,
            _ => self.f() > o.f(),
        }
    }
    fn ge(&self, o: &Num) -> bool {
        match (self, o) {
            (Num::I(a), Num::I(b)) => a >= b,
            _ => self.f() >= o.f(),
        }
    }
    fn repr(self) -> String {
        match self {
            Num::I(i) => i.to_string(),
            Num::F(x) => py_float(x),
        }
    }
}

fn int_json(i: i128) -> Value {
    if let Ok(u) = u64::try_from(i) {
        Value::from(u)
    } else if let Ok(s) = i64::try_from(i) {
        Value::from(s)
    } else {
        Value::from(i as f64)
    }
}

/// The tree as JSON (spans dropped).
pub fn to_json(n: &Node) -> Value {
    match &n.v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Int(i) => int_json(*i),
        Val::Float(x) => serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number),
        Val::Str(s) | Val::Datetime(s) => Value::String(s.clone()),
        Val::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Val::Table(t) => Value::Object(t.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
    }
}

/// Python's `==` on JSON values (1 == 1.0).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// A float as Python's repr writes it (shortest round trip; exponent form
/// below 1e-4 and from 1e16).
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let e = format!("{x:e}"); // shortest digits, e.g. "-1.5e-6"
    let (mant, exp) = e.split_once('e').expect("LowerExp has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let (sign, mant) = mant.strip_prefix('-').map_or(("", mant), |m| ("-", m));
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        if point <= 0 {
            format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{sign}{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            let (a, b) = digits.split_at(point as usize);
            format!("{sign}{a}.{b}")
        }
    } else {
        let m = if digits.len() > 1 { format!("{}.{}", &digits[..1], &digits[1..]) } else { digits };
        format!("{sign}{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

/// Python's `f"{x:.3g}"`.
fn g3(x: f64) -> String {
    let e = format!("{x:.2e}");
    let (mant, exp) = e.split_once('e').expect("LowerExp has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let trim = |s: String| if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if (-4..3).contains(&exp) {
        trim(format!("{:.*}", (2 - exp).max(0) as usize, x))
    } else {
        format!("{}e{}{:02}", trim(mant.to_string()), if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

/// Python's repr of a string.
pub fn py_repr_str(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::from(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == q => {
                out.push('\\');
                out.push(c)
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// Python's str() of a JSON choice.
fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => py_json(other),
    }
}

/// Python's repr of a JSON value.
fn py_json(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Number(n) => Num::of(v).map_or_else(|| n.to_string(), Num::repr),
        Value::String(s) => py_repr_str(s),
        Value::Array(a) => format!("[{}]", a.iter().map(py_json).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => {
            format!("{{{}}}", o.iter().map(|(k, v)| format!("{}: {}", py_repr_str(k), py_json(v))).collect::<Vec<_>>().join(", "))
        }
    }
}

/// A value as the user wrote it (TOML spelling for booleans, Python's repr otherwise).
fn show(n: &Node) -> String {
    match &n.v {
        Val::Bool(b) => if *b { "true" } else { "false" }.into(),
        Val::Datetime(s) => s.clone(),
        // JSON has no NaN or infinity (to_json makes them null): named as TOML writes them
        Val::Float(x) if x.is_nan() => "nan".into(),
        Val::Float(x) if x.is_infinite() => if *x > 0.0 { "inf" } else { "-inf" }.into(),
        _ => py_json(&to_json(n)),
    }
}

fn type_name(n: &Node) -> &'static str {
    match n.v {
        Val::Null => "NoneType",
        Val::Bool(_) => "bool",
        Val::Int(_) => "int",
        Val::Float(_) => "float",
        Val::Str(_) => "str",
        Val::Datetime(_) => "datetime",
        Val::Array(_) => "list",
        Val::Table(_) => "dict",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> ScenarioError {
        load(text, "scn.toml", Path::new("/base"), &[]).unwrap_err()
    }

    fn at(e: &ScenarioError) -> (ErrorKind, &str, Option<usize>, Option<usize>) {
        (e.kind, e.key.as_str(), e.line, e.column)
    }

    #[test]
    fn each_kind_names_key_line_and_column() {
        let e = err("seed = 1\n[network]\nL_s = = 3\n");
        assert_eq!(at(&e), (ErrorKind::Syntax, "", Some(3), Some(7)));
        assert!(e.to_string().starts_with("scn.toml:3:7: TOML syntax error: "), "{e}");
        let e = err("[workload]\nranks = 18446744073709551616\n");
        assert_eq!(at(&e), (ErrorKind::Syntax, "", Some(2), Some(9)));
        assert!(
            e.to_string().ends_with("integer 18446744073709551616 is too large: a TOML integer is at most 9223372036854775807 (2^63 - 1)"),
            "{e}"
        );
        let e = err(&format!("[{}]\n", vec!["a"; 3000].join(".")));
        assert!(e.to_string().ends_with("TOML nested too deeply to read"), "{e}");
        let e = err("[workload]\ncompute = 1\n");
        assert_eq!(at(&e), (ErrorKind::UnknownKey, "workload.compute", Some(2), Some(11)));
        let e = err("[[noise]]\nkind = \"single\"\n");
        assert_eq!(at(&e), (ErrorKind::MissingKey, "noise[0].rank", Some(1), Some(1)), "its table [[noise]]: {e}");
        let e = err("[network]\nS_bytes = \"abc\"\n");
        assert_eq!(at(&e), (ErrorKind::Type, "network.S_bytes", Some(2), Some(11)));
        assert_eq!(e.to_string(), "scn.toml:2:11: network.S_bytes: expected an integer, got 'abc' (str)");
        let e = err("[network]\nS_bytes = nan\n");
        assert_eq!(e.to_string(), "scn.toml:2:11: network.S_bytes: expected an integer, got nan (float)");
        let e = err("[network]\nS_bytes = -inf\n");
        assert_eq!(e.to_string(), "scn.toml:2:11: network.S_bytes: expected an integer, got -inf (float)");
        let e = err("[[noise]]\nkind = \"single\"\nrank = 0\n[[noise]]\nkind = \"periodic\"\nduration_s = -1\n");
        assert_eq!(at(&e), (ErrorKind::Value, "noise[1].duration_s", Some(6), Some(14)));
        assert_eq!(e.to_string(), "scn.toml:6:14: noise[1].duration_s: must be >= 0, got -1");
        let e = err("[workload]\nranks = 8\ndistances = [1, 8]\n");
        assert_eq!(at(&e), (ErrorKind::Rule, "workload.distances[1]", Some(3), Some(17)));
        assert_eq!(e.to_string(), "scn.toml:3:17: workload.distances[1]: must be < ranks (8), got 8");
        let e = err("[network]\nplatform = \"nowhere.toml\"\n");
        assert_eq!(at(&e), (ErrorKind::Platform, "network.platform", Some(2), Some(12)));
        assert!(e.message.contains("is neither a preset (anvil, "), "{e}");
        let set = [("seed.x".to_string(), Node::new(Val::Int(1)))];
        let e = load("seed = 3\n", "scn.toml", Path::new("/"), &set).unwrap_err();
        assert_eq!(at(&e), (ErrorKind::Override, "seed", Some(1), Some(8)));
        assert_eq!(e.message, "cannot override 'seed.x': seed is not a table");
    }

    #[test]
    fn a_rule_without_a_written_key_points_at_its_table() {
        let e = err("[workload]\nkind = \"collective\"\nranks = 4\n\n[[noise]]\nkind = \"single\"\nrank = 9\n");
        assert_eq!(at(&e), (ErrorKind::Rule, "noise[0].rank", Some(7), Some(8)));
        // the key a rule names was defaulted: its table
        let e = err("[workload]\nkind = \"collective\"\ncollective = \"barrier\"\nalgorithm = \"ring\"\n");
        assert_eq!((e.key.as_str(), e.line), ("workload.algorithm", Some(4)));
    }

    #[test]
    fn defaults_paths_platforms_and_overrides() {
        let set = [("workload.ranks".to_string(), Node::new(Val::Int(8)))];
        let Loaded { scenario: scn, doc, .. } =
            load("[network]\nplatform = \"meggie\"\n[[noise]]\nkind = \"trace\"\npath = \"t.txt\"\n", "s.toml", Path::new("/b"), &set)
                .unwrap();
        assert_eq!(scn.workload.shape().ranks, Some(8));
        assert_eq!(doc["noise"][0]["path"], "/b/t.txt");
        assert_eq!(doc["network"]["platform"], "meggie");
        assert_eq!(doc["seed"], 1);
        // the document reads back as itself
        let again = finish(Node::from_json(&doc), &Origin { source: "<dict>", text: None, base_dir: Path::new("/") }).unwrap();
        assert_eq!(again.doc, doc);
    }

    #[test]
    fn numbers_read_as_python_writes_them() {
        assert_eq!(py_float(-1.0), "-1.0");
        assert_eq!(py_float(1e-14), "1e-14");
        assert_eq!(py_float(1e-5), "1e-05");
        assert_eq!(py_float(1e9), "1000000000.0");
        assert_eq!(py_float(2.5e-6), "2.5e-06");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(123.456), "123.456");
        assert_eq!(g3(1152921.504606847), "1.15e+06");
        assert_eq!(resolve_path(Path::new("/a/b"), "../c/./d.txt"), "/a/c/d.txt");
    }
}

//! Reader and writer for LogGOPSim's textual GOAL schedule format (its binary
//! format: `goal_bin`; a file of either: `goal_file`).
//!
//! A GOAL file describes, per rank, a list of operations (`send`, `recv`, `calc`) and the
//! dependencies between them:
//!
//! ```text
//! num_ranks 2
//! rank 0 {
//! l1: send 8b to 1 tag 0
//! l2: calc 100 cpu 0
//! l2 requires l1
//! }
//! rank 1 {
//! l1: recv 8b from -1 tag -1
//! }
//! ```
//!
//! [`parse_goal`] accepts everything LogGOPSim's `txt2bin` accepts (see the notes on
//! [`parse_goal`] for the few deliberate differences) and reports every problem as a
//! [`GoalError`] with a 1-based line and column. [`write_goal`] produces canonical text that
//! [`parse_goal`] reads back to an equal [`GoalSchedule`].
//!
//! The parser makes a single pass over the text, keeps only byte offsets in its tokens and
//! turns an offset into a line and column only when it reports an error, so multi-million
//! line schedules parse in linear time.

use rustc_hash::FxHashMap as HashMap;
use std::fmt::{self, Write as _};
use std::path::Path;

/// Peer or tag value meaning "any source" / "any tag" (written `-1` in GOAL text).
pub const ANY: u32 = u32::MAX;

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalKind {
    Send,
    Recv,
    Calc,
}

/// One operation of a rank's schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoalOp {
    pub kind: GoalKind,
    /// Destination for `Send`, source for `Recv` ([`ANY`] allowed for `Recv`), 0 for `Calc`.
    pub peer: u32,
    /// Message tag ([`ANY`] allowed for `Recv`), 0 for `Calc`.
    pub tag: u32,
    /// Message size in bytes, or duration in ns for `Calc`.
    pub size: u64,
    pub cpu: u8,
    /// NIC used by a `Send`/`Recv`; always 0 for `Calc` (the text format has no `nic` on calc).
    pub nic: u8,
}

/// The operations and dependencies of one rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoalRank {
    /// Operations in schedule order (the order they appear in the rank block).
    pub ops: Vec<GoalOp>,
    /// `(a, b)`: op `a` starts only after op `b` is done (indices into `ops`), in file order.
    pub requires: Vec<(u32, u32)>,
    /// `(a, b)`: op `a` starts only after op `b` has started, in file order.
    pub irequires: Vec<(u32, u32)>,
}

/// A whole GOAL schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalSchedule {
    pub num_ranks: u32,
    /// Index = rank id.
    pub ranks: Vec<GoalRank>,
}

impl GoalSchedule {
    /// Highest `cpu` used by any operation (0 for an empty schedule).
    pub fn max_cpu(&self) -> u8 {
        self.all_ops().map(|op| op.cpu).max().unwrap_or(0)
    }

    /// Highest `nic` used by any operation (0 for an empty schedule).
    pub fn max_nic(&self) -> u8 {
        self.all_ops().map(|op| op.nic).max().unwrap_or(0)
    }

    /// Total number of operations over all ranks.
    pub fn num_ops(&self) -> usize {
        self.ranks.iter().map(|r| r.ops.len()).sum()
    }

    fn all_ops(&self) -> impl Iterator<Item = &GoalOp> {
        self.ranks.iter().flat_map(|r| r.ops.iter())
    }
}

/// A parse or I/O error, located in the input file.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalError {
    pub file: String,
    /// 1-based line; 0 when the error is not about a position in the text (I/O errors).
    pub line: usize,
    /// 1-based column in characters; 0 together with `line == 0`.
    pub column: usize,
    pub message: String,
    /// Stopped from outside (Ctrl-C) while reading, not an error in the file.
    pub interrupted: bool,
}

impl fmt::Display for GoalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            // There is no position to point at (e.g. the file could not be opened).
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.message)
        }
    }
}

impl std::error::Error for GoalError {}

impl GoalError {
    /// An I/O error on `file`: no position in it to point at.
    pub fn io(file: &str, e: std::io::Error) -> GoalError {
        GoalError { file: file.to_string(), line: 0, column: 0, message: e.to_string(), interrupted: false }
    }
}

/// Parses GOAL text. `file` is only used to label errors.
///
/// Differences from LogGOPSim's `txt2bin`, all of them stricter checks or harmless extensions:
/// * labels may be used before they are defined within their rank block;
/// * comments may also follow a statement on the same line; a `/* */` comment counts as
///   whitespace, so one spanning lines does not end a statement;
/// * keywords must be separated from each other by whitespace (`8b`, `l1:`, `rank 0{` are
///   fine, but `to1` or `8bto` are not), because tokens are words, integers and punctuation;
/// * semantic errors (ranges, duplicates, missing ranks, undefined labels, `-1` on a send)
///   are reported instead of crashing or being silently accepted.
pub fn parse_goal(text: &str, file: &str) -> Result<GoalSchedule, GoalError> {
    Parser::new(text).parse().map_err(|fail| fail.into_goal_error(text, file))
}

/// Reads and parses a GOAL text file. I/O errors become a [`GoalError`] with line 0.
pub fn read_goal_text_file(path: &Path) -> Result<GoalSchedule, GoalError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| GoalError::io(&file, e))?;
    parse_goal(utf8(&bytes, &file)?, &file)
}

/// Where a parser hands each rank block as it is parsed (an engine program
/// being built, which then drops it), instead of keeping them.
pub trait RankSink {
    /// The schedule's rank count; the hints bound what to reserve (from the text's size).
    fn num_ranks(&mut self, num_ranks: u32, ranks_hint: usize, ops_hint: usize);
    /// Rank `id`'s block, in file order, and the offset the text is parsed to.
    fn rank(&mut self, id: u32, block: GoalRank, parsed_to: usize);
}

/// Parses GOAL text, handing each rank block to `sink`; checks as [`parse_goal`] does.
pub fn parse_goal_into(text: &str, file: &str, sink: &mut dyn RankSink) -> Result<(), GoalError> {
    let mut parser = Parser::new(text);
    parser.sink = Some(sink);
    parser.statements().and_then(|eof| parser.check_complete(eof)).map(drop).map_err(|fail| fail.into_goal_error(text, file))
}

/// The bytes as text, or an error at the first byte that is not UTF-8.
pub(crate) fn utf8<'a>(bytes: &'a [u8], file: &str) -> Result<&'a str, GoalError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let valid = e.valid_up_to();
        let prefix = std::str::from_utf8(&bytes[..valid]).unwrap_or("");
        let (line, column) = line_col(prefix, prefix.len());
        GoalError { file: file.to_string(), line, column, message: "the file is not valid UTF-8".to_string(), interrupted: false }
    })
}

/// The rank count a GOAL file declares (its `num_ranks N`, which comes before
/// any rank block), read from the file's first 64 KiB without loading the
/// schedule: a job's ranks are placed before its schedule is read. The whole
/// file is read only where its beginning does not settle it (a header behind
/// 64 KiB of comments, or cut by the 64 KiB).
pub fn read_goal_text_ranks(path: &Path) -> Result<u32, GoalError> {
    use std::io::Read as _;
    let file = path.display().to_string();
    let io = |e: std::io::Error| GoalError::io(&file, e);
    // (a device or pipe could block or never end)
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Err(GoalError { message: "a GOAL schedule must be a regular file".into(), ..io(std::io::ErrorKind::Other.into()) });
    }
    for prefix in [64 << 10, u64::MAX] {
        let mut bytes = Vec::new();
        std::fs::File::open(path).and_then(|f| f.take(prefix).read_to_end(&mut bytes)).map_err(io)?;
        let whole = (bytes.len() as u64) < prefix;
        // a prefix may end inside a character: the header is ASCII, before it
        let text = match std::str::from_utf8(&bytes) {
            Ok(t) => t,
            Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("valid up to there"),
        };
        match Parser::new(text).header() {
            // a number that ends where the prefix ends may go on after it
            Ok((n, end)) if whole || end < text.len() => return Ok(n),
            // a failing token a newline follows is complete (unless a block comment hides the newline)
            Err(f) if whole || (text[f.pos..].contains('\n') && !text[f.pos..].starts_with("/*")) => {
                return Err(f.into_goal_error(text, &file))
            }
            _ => {}
        }
    }
    unreachable!("the whole file settles it")
}

/// Writes a schedule as canonical GOAL text.
///
/// Every op is labelled `l<index>`, `-1` stands for [`ANY`], `tag` is always written for
/// send/recv, `cpu`/`nic` only when non-zero. Calc ops are written as `calc SIZE [cpu C]`:
/// their `peer`, `tag` and `nic` cannot be expressed in the format (they are 0 after parsing).
pub fn write_goal(s: &GoalSchedule) -> String {
    // Roughly 30 bytes per op line; avoids most reallocations for big schedules.
    let mut out = String::with_capacity(32 + s.num_ops() * 30);
    // Writing into a String cannot fail, so the fmt::Result values are ignored.
    let _ = writeln!(out, "num_ranks {}", s.num_ranks);
    out.push('\n');
    for (r, rank) in s.ranks.iter().enumerate() {
        let _ = writeln!(out, "rank {r} {{");
        for (i, op) in rank.ops.iter().enumerate() {
            write_op(&mut out, i, op);
        }
        for &(a, b) in &rank.requires {
            let _ = writeln!(out, "l{a} requires l{b}");
        }
        for &(a, b) in &rank.irequires {
            let _ = writeln!(out, "l{a} irequires l{b}");
        }
        out.push_str("}\n\n");
    }
    out
}

fn write_op(out: &mut String, index: usize, op: &GoalOp) {
    let _ = write!(out, "l{index}: ");
    match op.kind {
        GoalKind::Calc => {
            let _ = write!(out, "calc {}", op.size);
            if op.cpu != 0 {
                let _ = write!(out, " cpu {}", op.cpu);
            }
        }
        GoalKind::Send | GoalKind::Recv => {
            let (keyword, preposition) = match op.kind {
                GoalKind::Send => ("send", "to"),
                _ => ("recv", "from"),
            };
            let _ = write!(out, "{keyword} {}b {preposition} {} tag {}", op.size, AnyOr(op.peer), AnyOr(op.tag));
            if op.cpu != 0 {
                let _ = write!(out, " cpu {}", op.cpu);
            }
            if op.nic != 0 {
                let _ = write!(out, " nic {}", op.nic);
            }
        }
    }
    out.push('\n');
}

/// Formats a peer or tag, writing [`ANY`] as `-1`.
struct AnyOr(u32);

impl fmt::Display for AnyOr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == ANY {
            f.write_str("-1")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Errors inside the parser
// ---------------------------------------------------------------------------------------------

/// An error at a byte offset; converted to line/column only once, when it leaves the parser.
#[derive(Debug)]
struct Fail {
    pos: usize,
    message: String,
    interrupted: bool,
}

impl Fail {
    fn into_goal_error(self, text: &str, file: &str) -> GoalError {
        let (line, column) = line_col(text, self.pos);
        GoalError { file: file.to_string(), line, column, message: self.message, interrupted: self.interrupted }
    }
}

type PResult<T> = Result<T, Fail>;

fn fail<T>(pos: usize, message: impl Into<String>) -> PResult<T> {
    Err(Fail { pos, message: message.into(), interrupted: false })
}

/// 1-based line and character column of byte offset `pos` (which must be a char boundary).
/// Linear in `pos`, which is fine because it only runs when reporting an error.
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let before = &text[..pos];
    let line = 1 + before.bytes().filter(|&b| b == b'\n').count();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = 1 + before[line_start..].chars().count();
    (line, column)
}

// ---------------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok<'a> {
    /// `[a-zA-Z][a-zA-Z0-9_]*`: keywords and labels.
    Word(&'a str),
    /// Digits with an optional leading `-`; interpreted by the parser, which knows the field.
    Int(&'a str),
    Colon,
    LBrace,
    RBrace,
    Newline,
    /// Returned again on every call once the input is exhausted.
    Eof,
    /// Anything else; always a syntax error, kept so the message can name it.
    Other(char),
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    tok: Tok<'a>,
    /// Byte offset of the token's first character.
    pos: usize,
}

/// How a token is named in "found ..." messages.
fn describe(tok: Tok<'_>) -> String {
    match tok {
        // (short tokens only: an error must not copy out a file's contents)
        Tok::Word(s) | Tok::Int(s) if s.chars().count() <= 24 => format!("'{s}'"),
        Tok::Word(s) | Tok::Int(s) => format!("a word of {} characters", s.chars().count()),
        Tok::Colon => "':'".to_string(),
        Tok::LBrace => "'{'".to_string(),
        Tok::RBrace => "'}'".to_string(),
        Tok::Newline => "end of line".to_string(),
        Tok::Eof => "end of file".to_string(),
        Tok::Other('\r') => "a carriage return not followed by a newline".to_string(),
        Tok::Other(c) if c.is_control() || c.is_whitespace() => {
            format!("character U+{:04X}", c as u32)
        }
        Tok::Other(c) => format!("'{c}'"),
    }
}

/// What kind of token `tok` is, without its text (for a file not yet known to be GOAL).
fn kind_of(tok: Tok<'_>) -> String {
    match tok {
        Tok::Word(s) => format!("a word of {} characters", s.chars().count()),
        Tok::Int(s) => format!("a number of {} digits", s.chars().count()),
        Tok::Other(c) if !(c.is_ascii_punctuation() || c.is_whitespace() || c.is_control()) => "a character that is not ASCII".to_string(),
        other => describe(other),
    }
}

/// Byte classes, looked up rather than compared (scanning words and numbers
/// was the parse's largest cost).
const WORD: u8 = 1;
const DIGIT: u8 = 2;
static CLASS: [u8; 256] = {
    let mut c = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let u = b as u8;
        if u.is_ascii_alphanumeric() || u == b'_' {
            c[b] |= WORD;
        }
        if u.is_ascii_digit() {
            c[b] |= DIGIT;
        }
        b += 1;
    }
    c
};

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        Lexer { src, pos: 0 }
    }

    fn peek_byte(&self, offset: usize) -> Option<u8> {
        self.src.as_bytes().get(self.pos + offset).copied()
    }

    #[inline(always)]
    fn next(&mut self) -> PResult<Token<'a>> {
        let bytes = self.src.as_bytes();
        // Blanks inline (the common case: one space); comments out of line.
        while matches!(bytes.get(self.pos), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
        if bytes.get(self.pos) == Some(&b'/') {
            self.skip_blanks_and_comments()?;
        }
        let start = self.pos;
        let Some(&b) = bytes.get(start) else {
            return Ok(Token { tok: Tok::Eof, pos: start });
        };
        let tok = match b {
            b'\n' => {
                self.pos += 1;
                Tok::Newline
            }
            b'\r' if self.peek_byte(1) == Some(b'\n') => {
                self.pos += 2;
                Tok::Newline
            }
            b':' => {
                self.pos += 1;
                Tok::Colon
            }
            b'{' => {
                self.pos += 1;
                Tok::LBrace
            }
            b'}' => {
                self.pos += 1;
                Tok::RBrace
            }
            b'0'..=b'9' => Tok::Int(self.take_digits(start)),
            b'-' if matches!(self.peek_byte(1), Some(b'0'..=b'9')) => {
                self.pos += 1;
                Tok::Int(self.take_digits(start))
            }
            b'a'..=b'z' | b'A'..=b'Z' => {
                self.pos = self.scan_while(start, |b| CLASS[b as usize] & WORD != 0);
                Tok::Word(&self.src[start..self.pos])
            }
            _ => {
                // `start` is a char boundary: every branch above advances by whole ASCII chars.
                let c = self.src[start..].chars().next().unwrap_or('\u{FFFD}');
                self.pos += c.len_utf8();
                Tok::Other(c)
            }
        };
        Ok(Token { tok, pos: start })
    }

    /// Consumes digits from `self.pos` on and returns the text from `start`.
    fn take_digits(&mut self, start: usize) -> &'a str {
        self.pos = self.scan_while(self.pos, |b| CLASS[b as usize] & DIGIT != 0);
        &self.src[start..self.pos]
    }

    #[inline]
    fn scan_while(&self, from: usize, pred: impl Fn(u8) -> bool) -> usize {
        let rest = &self.src.as_bytes()[from..];
        from + rest.iter().position(|&b| !pred(b)).unwrap_or(rest.len())
    }

    /// Skips spaces, tabs and comments. Newlines are tokens (they end statements), so a line
    /// comment stops just before its newline.
    #[cold]
    fn skip_blanks_and_comments(&mut self) -> PResult<()> {
        loop {
            self.pos = self.scan_while(self.pos, |b| b == b' ' || b == b'\t');
            if self.peek_byte(0) != Some(b'/') {
                return Ok(());
            }
            let rest = &self.src[self.pos..];
            if rest.starts_with("//") {
                match rest.find('\n') {
                    // Stop before the newline; in a CRLF file, before its '\r', so that
                    // "\r\n" is still lexed as one newline token.
                    Some(i) if i > 0 && rest.as_bytes()[i - 1] == b'\r' => self.pos += i - 1,
                    Some(i) => self.pos += i,
                    None => self.pos += rest.len(),
                }
            } else if let Some(body) = rest.strip_prefix("/*") {
                match body.find("*/") {
                    Some(end) => self.pos += 2 + end + 2,
                    None => return fail(self.pos, "unterminated comment: expected '*/', found end of file"),
                }
            } else {
                return Ok(());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

fn is_op_keyword(word: &str) -> bool {
    matches!(word, "send" | "recv" | "calc")
}

/// An integer literal with its sign split off, so each field can apply its own rules
/// (`-1` is meaningful for some fields, an error for others).
struct Num<'a> {
    pos: usize,
    text: &'a str,
    negative: bool,
    magnitude: u64,
}

/// A `requires`/`irequires` line whose labels are looked up when its rank block closes,
/// because it may name labels defined further down.
struct PendingDep<'a> {
    op: &'a str,
    op_pos: usize,
    prerequisite: &'a str,
    prerequisite_pos: usize,
    /// `irequires`: wait for the prerequisite to start, not to finish.
    start_only: bool,
}

/// A rank block's labels: name -> (op index, offset of the definition).
/// Most schedules name ops `l<n>` (schedgen, txt2bin's examples, our
/// exports): those with a small n, written without leading zeros, are kept
/// by n in a vector, the rest hashed by name (hashing and comparing the
/// names was a fifth of the parse).
#[derive(Default)]
struct Labels<'a> {
    /// by_number[n]: label `l<n>`'s op index + 1 (0: not defined) and offset.
    by_number: Vec<(u32, usize)>,
    /// The n defined in this block, to clear them at its end.
    numbers: Vec<u32>,
    by_name: HashMap<&'a str, (u32, usize)>,
}

/// `l<n>` labels kept by number below this n (the vector grows to the largest used).
const LABEL_NUMBERS: u64 = 1 << 24;

impl<'a> Labels<'a> {
    /// The n of a label `l<n>` kept by number.
    #[inline]
    fn number(name: &str) -> Option<u32> {
        let digits = name.strip_prefix('l')?.as_bytes();
        if digits.is_empty() || digits.len() > 8 || (digits[0] == b'0' && digits.len() > 1) {
            return None;
        }
        let n = digits.iter().try_fold(0u64, |n, &d| d.is_ascii_digit().then(|| n * 10 + u64::from(d - b'0')))?;
        (n < LABEL_NUMBERS).then_some(n as u32)
    }

    fn get(&self, name: &str) -> Option<(u32, usize)> {
        match Self::number(name) {
            Some(n) => self.by_number.get(n as usize).filter(|e| e.0 > 0).map(|&(i, pos)| (i - 1, pos)),
            None => self.by_name.get(name).copied(),
        }
    }

    /// Defines `name` (not yet defined) as op `index`, at `pos`.
    fn insert(&mut self, name: &'a str, (index, pos): (u32, usize)) {
        match Self::number(name) {
            Some(n) => {
                if n as usize >= self.by_number.len() {
                    self.by_number.resize(n as usize + 1, (0, 0));
                }
                self.by_number[n as usize] = (index + 1, pos);
                self.numbers.push(n);
            }
            None => {
                self.by_name.insert(name, (index, pos));
            }
        }
    }

    fn clear(&mut self) {
        for n in self.numbers.drain(..) {
            self.by_number[n as usize].0 = 0;
        }
        self.by_name.clear();
    }
}

struct Parser<'a> {
    lex: Lexer<'a>,
    /// Declared rank count and the offset of its `num_ranks` keyword.
    num_ranks: Option<(u32, usize)>,
    /// Finished rank blocks in file order (unless they go to `program`).
    ranks: Vec<GoalRank>,
    /// Rank blocks parsed so far.
    blocks: usize,
    /// Where rank blocks go as they are parsed, if not into `ranks`.
    sink: Option<&'a mut dyn RankSink>,
    /// Their rank ids, kept only once a block came out of order (else block i is rank i).
    ids: Vec<u32>,
    /// Rank id -> offset of its `rank` keyword, to detect duplicates. A map rather than a
    /// vector indexed by rank so a huge `num_ranks` in a tiny file cannot allocate gigabytes.
    rank_seen: HashMap<u32, usize>,
    /// The same for blocks 0, 1, 2, … while they come in order (`rank_seen` empty).
    in_order_pos: Vec<usize>,
    /// Labels of the current rank block -> (op index, offset of the definition).
    labels: Labels<'a>,
    /// Dependencies of the current rank block, in file order.
    pending: Vec<PendingDep<'a>>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        Parser {
            lex: Lexer::new(src),
            num_ranks: None,
            ranks: Vec::new(),
            blocks: 0,
            sink: None,
            ids: Vec::new(),
            rank_seen: HashMap::default(),
            in_order_pos: Vec::new(),
            labels: Labels::default(),
            pending: Vec::new(),
        }
    }

    fn line_of(&self, pos: usize) -> usize {
        line_col(self.lex.src, pos).0
    }

    #[inline(always)]
    fn next(&mut self) -> PResult<Token<'a>> {
        self.lex.next()
    }

    // --- top level -----------------------------------------------------------------------

    fn parse(mut self) -> PResult<GoalSchedule> {
        let eof = self.statements()?;
        self.finish(eof)
    }

    /// Parses every statement; returns the end of file's offset.
    fn statements(&mut self) -> PResult<usize> {
        // Like txt2bin, `num_ranks N`, `rank N {` and `}` need no newline after them;
        // blank lines between statements are skipped here.
        // Until a first statement shows the file is a schedule, an error names
        // only the kind of token found: the file may be anything (a password
        // file given by mistake), and its contents must not reach a terminal or log.
        let mut recognised = false;
        loop {
            let t = self.next()?;
            match t.tok {
                Tok::Newline => {}
                Tok::Eof => return Ok(t.pos),
                Tok::Word("num_ranks") => {
                    self.parse_num_ranks(t.pos)?;
                    recognised = true;
                }
                Tok::Word("rank") => {
                    self.parse_rank_block(t.pos)?;
                    recognised = true;
                }
                Tok::RBrace => return fail(t.pos, "expected 'num_ranks' or 'rank', found '}' without an open rank block"),
                Tok::Word(w) if is_op_keyword(w) => {
                    return fail(t.pos, format!("operation outside a rank block: expected 'num_ranks' or 'rank', found '{w}'"))
                }
                other if !recognised => {
                    return fail(
                        t.pos,
                        format!("not a GOAL schedule: it must begin with 'num_ranks N' or 'rank N {{', found {}", kind_of(other)),
                    )
                }
                other => return fail(t.pos, format!("expected 'num_ranks' or 'rank', found {}", describe(other))),
            }
        }
    }

    /// The `num_ranks N` a schedule begins with (after blank lines and
    /// comments), and the offset just after N.
    fn header(mut self) -> PResult<(u32, usize)> {
        loop {
            let t = self.next()?;
            match t.tok {
                Tok::Newline => {}
                Tok::Word("num_ranks") => return Ok((self.rank_count()?, self.lex.pos)),
                Tok::Word("rank") => return fail(t.pos, "rank block before 'num_ranks': expected 'num_ranks N' first, found 'rank'"),
                other => return fail(t.pos, format!("not a GOAL schedule: it must begin with 'num_ranks N', found {}", kind_of(other))),
            }
        }
    }

    /// Checks that every rank has exactly one block and orders the blocks by rank id.
    fn finish(self, eof_pos: usize) -> PResult<GoalSchedule> {
        let num_ranks = self.check_complete(eof_pos)?;
        if self.rank_seen.is_empty() {
            return Ok(GoalSchedule { num_ranks, ranks: self.ranks });
        }
        let mut ranks = vec![GoalRank::default(); num_ranks as usize];
        for (id, rank) in self.ids.into_iter().zip(self.ranks) {
            ranks[id as usize] = rank;
        }
        Ok(GoalSchedule { num_ranks, ranks })
    }

    /// Checks that every rank has exactly one block; returns the rank count.
    fn check_complete(&self, eof_pos: usize) -> PResult<u32> {
        let Some((num_ranks, decl_pos)) = self.num_ranks else {
            return fail(eof_pos, "expected 'num_ranks N', found end of file (the schedule declares no ranks)");
        };
        // Ids are unique and < num_ranks (checked when each block opened), so the blocks
        // cover every rank exactly when there are num_ranks of them.
        let in_order = self.rank_seen.is_empty();
        if self.blocks < num_ranks as usize {
            let mut ids = self.ids.clone();
            ids.sort_unstable();
            let missing = if in_order {
                self.blocks as u32
            } else {
                ids.iter().zip(0u32..).find(|(id, expected)| *id != expected).map_or(ids.len() as u32, |(_, expected)| expected)
            };
            return fail(
                decl_pos,
                format!("missing rank: num_ranks {num_ranks} declares ranks 0..={} but there is no 'rank {missing}' block", num_ranks - 1),
            );
        }
        Ok(num_ranks)
    }

    fn parse_num_ranks(&mut self, kw_pos: usize) -> PResult<()> {
        if let Some((_, first)) = self.num_ranks {
            return fail(kw_pos, format!("duplicate 'num_ranks' (already given at line {})", self.line_of(first)));
        }
        let count = self.rank_count()?;
        self.num_ranks = Some((count, kw_pos));
        // A rank block takes at least 8 bytes of text: no more can follow.
        let most = (count as usize).min(self.lex.src.len() / 8);
        match &mut self.sink {
            // (an op and the dependency line chaining it take at least 24 bytes)
            Some(sink) => sink.num_ranks(count, most, self.lex.src.len() / 24),
            None => self.ranks.reserve(most),
        }
        Ok(())
    }

    /// The N of `num_ranks N`.
    fn rank_count(&mut self) -> PResult<u32> {
        let n = self.expect_unsigned("the number of ranks (a positive integer)")?;
        if n.magnitude == 0 {
            return fail(n.pos, "expected a positive number of ranks, found '0'");
        }
        u32::try_from(n.magnitude).or_else(|_| fail(n.pos, format!("num_ranks {} is too large (at most {})", n.text, u32::MAX)))
    }

    // --- rank blocks ---------------------------------------------------------------------

    fn parse_rank_block(&mut self, kw_pos: usize) -> PResult<()> {
        let Some((num_ranks, _)) = self.num_ranks else {
            return fail(kw_pos, "rank block before 'num_ranks': expected 'num_ranks N' first, found 'rank'");
        };
        let n = self.expect_unsigned("a rank number")?;
        if n.magnitude >= u64::from(num_ranks) {
            return fail(n.pos, out_of_range("rank", n.text, num_ranks));
        }
        let id = n.magnitude as u32;
        // Blocks usually come in rank order: while they do, no map is needed.
        if id as usize == self.blocks && self.rank_seen.is_empty() {
            self.in_order_pos.push(kw_pos);
        } else {
            if self.rank_seen.is_empty() {
                self.rank_seen.extend(self.in_order_pos.drain(..).enumerate().map(|(i, p)| (i as u32, p)));
                self.ids.extend(0..self.blocks as u32);
            }
            if let Some(&first) = self.rank_seen.get(&id) {
                return fail(n.pos, format!("duplicate block for rank {id} (first opened at line {})", self.line_of(first)));
            }
            self.rank_seen.insert(id, kw_pos);
        }
        let t = self.next()?;
        if t.tok != Tok::LBrace {
            return fail(t.pos, format!("expected '{{' after 'rank {id}', found {}", describe(t.tok)));
        }
        let rank = self.parse_block_body(kw_pos, id)?;
        self.blocks += 1;
        match &mut self.sink {
            Some(sink) => sink.rank(id, rank, self.lex.pos),
            None => self.ranks.push(rank),
        }
        if !self.rank_seen.is_empty() {
            self.ids.push(id);
        }
        Ok(())
    }

    /// Parses statements up to and including the closing `}`, then resolves the block's labels.
    fn parse_block_body(&mut self, open_pos: usize, rank_id: u32) -> PResult<GoalRank> {
        let mut rank = GoalRank::default();
        loop {
            let t = self.next()?;
            match t.tok {
                Tok::Newline => {}
                Tok::RBrace => break,
                Tok::Eof => {
                    return fail(
                        t.pos,
                        format!("unterminated rank block opened at line {}: expected '}}', found end of file", self.line_of(open_pos)),
                    )
                }
                Tok::Word(w) if is_op_keyword(w) => {
                    let op = self.parse_op(w)?;
                    push_op(&mut rank, op, t.pos)?;
                    if rank.ops.len().is_multiple_of(1 << 16) && !crate::interrupt::keep_going() {
                        return Err(Fail { pos: t.pos, message: crate::interrupt::INTERRUPTED.into(), interrupted: true });
                    }
                }
                Tok::Word(w @ ("rank" | "num_ranks")) => {
                    return fail(
                        t.pos,
                        format!("expected '}}' to close the rank block opened at line {}, found '{w}'", self.line_of(open_pos)),
                    )
                }
                Tok::Word(w) => self.parse_labelled_statement(&mut rank, w, t.pos)?,
                other => return fail(t.pos, format!("expected an operation, a label, a dependency or '}}', found {}", describe(other))),
            }
        }
        self.resolve_dependencies(&mut rank, rank_id)?;
        self.labels.clear();
        Ok(rank)
    }

    /// A statement starting with a non-keyword word: `name: op ...` or `name (i)requires name`.
    fn parse_labelled_statement(&mut self, rank: &mut GoalRank, name: &'a str, name_pos: usize) -> PResult<()> {
        // The common forms, `name: send|recv|calc ...` and `name requires|irequires label`
        // with single spaces, straight from the bytes; the tokens below read everything else.
        let src = self.lex.src;
        let rest = &src.as_bytes()[self.lex.pos..];
        if let Some(after) = rest.strip_prefix(b": ") {
            if let Some(keyword) =
                ["send", "recv", "calc"].into_iter().find(|k| after.starts_with(k.as_bytes()) && after.get(4) == Some(&b' '))
            {
                let keyword_pos = self.lex.pos + 2;
                self.lex.pos = keyword_pos + 4;
                self.define_label(name, name_pos, rank.ops.len())?;
                let op = self.parse_op(keyword)?;
                return push_op(rank, op, keyword_pos);
            }
        }
        for (dep, start_only) in [(&b" requires "[..], false), (&b" irequires "[..], true)] {
            let Some(after) = rest.strip_prefix(dep) else { continue };
            let word = after.iter().take_while(|&&b| CLASS[b as usize] & WORD != 0).count();
            if word > 0 && after[0].is_ascii_alphabetic() && after.get(word) == Some(&b'\n') {
                let prerequisite_pos = self.lex.pos + dep.len();
                self.lex.pos = prerequisite_pos + word + 1;
                let prerequisite = &src[prerequisite_pos..prerequisite_pos + word];
                self.pending.push(PendingDep { op: name, op_pos: name_pos, prerequisite, prerequisite_pos, start_only });
                return Ok(());
            }
        }
        let t = self.next()?;
        match t.tok {
            Tok::Colon => {
                let k = self.next()?;
                let Tok::Word(w) = k.tok else {
                    return fail(k.pos, label_without_op(name, k.tok));
                };
                if !is_op_keyword(w) {
                    return fail(k.pos, label_without_op(name, k.tok));
                }
                self.define_label(name, name_pos, rank.ops.len())?;
                let op = self.parse_op(w)?;
                push_op(rank, op, k.pos)
            }
            Tok::Word(dep @ ("requires" | "irequires")) => {
                let target = self.next()?;
                let Tok::Word(prerequisite) = target.tok else {
                    return fail(target.pos, format!("expected a label after '{dep}', found {}", describe(target.tok)));
                };
                self.expect_end_of_statement("after the dependency")?;
                self.pending.push(PendingDep {
                    op: name,
                    op_pos: name_pos,
                    prerequisite,
                    prerequisite_pos: target.pos,
                    start_only: dep == "irequires",
                });
                Ok(())
            }
            other => fail(
                name_pos,
                format!(
                    "unknown statement: expected 'send', 'recv', 'calc', a label ('{name}: ...') or a \
                     dependency ('{name} requires ...'), found '{name}' followed by {}",
                    describe(other)
                ),
            ),
        }
    }

    fn define_label(&mut self, name: &'a str, pos: usize, index: usize) -> PResult<()> {
        if let Some((_, first)) = self.labels.get(name) {
            return fail(pos, format!("duplicate label '{name}' (already defined at line {} in this rank block)", self.line_of(first)));
        }
        // push_op rejects indices beyond u32 before this label could be used.
        self.labels.insert(name, (index as u32, pos));
        Ok(())
    }

    fn resolve_dependencies(&mut self, rank: &mut GoalRank, rank_id: u32) -> PResult<()> {
        // Taken out so the lookups can borrow `self.labels`; put back to reuse its capacity.
        let mut pending = std::mem::take(&mut self.pending);
        for dep in pending.drain(..) {
            let a = self.lookup_label(dep.op, dep.op_pos, rank_id)?;
            let b = self.lookup_label(dep.prerequisite, dep.prerequisite_pos, rank_id)?;
            if dep.start_only {
                rank.irequires.push((a, b));
            } else {
                rank.requires.push((a, b));
            }
        }
        self.pending = pending;
        Ok(())
    }

    fn lookup_label(&self, name: &str, pos: usize, rank_id: u32) -> PResult<u32> {
        match self.labels.get(name) {
            Some((index, _)) => Ok(index),
            None => fail(
                pos,
                format!(
                    "undefined label '{name}': the block of rank {rank_id} defines no such label (labels are local to their rank block)"
                ),
            ),
        }
    }

    // --- operations ----------------------------------------------------------------------

    /// Parses the rest of an operation after its keyword, through the end of the line.
    fn parse_op(&mut self, keyword: &str) -> PResult<GoalOp> {
        let kind = match keyword {
            "send" => GoalKind::Send,
            "recv" => GoalKind::Recv,
            _ => GoalKind::Calc,
        };
        if let Some((op, end)) = self.quick_op(kind) {
            self.lex.pos = end;
            return Ok(op);
        }
        let mut op = GoalOp { kind, peer: 0, tag: 0, size: 0, cpu: 0, nic: 0 };
        if kind == GoalKind::Calc {
            op.size = self.expect_unsigned("the calc duration (an integer)")?.magnitude;
            // txt2bin accepts only `cpu` on calc.
            self.parse_options(&mut op, &["cpu"])?;
            return Ok(op);
        }
        op.size = self.expect_unsigned("the message size (an integer followed by 'b')")?.magnitude;
        self.expect_word("b", "after the size")?;
        self.expect_direction(kind)?;
        op.peer = self.parse_peer(kind)?;
        self.parse_options(&mut op, &["tag", "cpu", "nic"])?;
        Ok(op)
    }

    /// The rest of an op in the form nearly every schedule writes, read
    /// straight from the bytes: ` SIZEb to PEER tag TAG` (`from` on a recv;
    /// the tag optional), or ` DURATION` for a calc, with single spaces and
    /// plain numbers, up to and including the newline. Returns the op and
    /// where the next line starts, or None for anything else (other
    /// spacing, options, `-1`, a comment, an error), which the token-by-token
    /// parse below reads instead, with the same result where both apply.
    #[inline]
    fn quick_op(&self, kind: GoalKind) -> Option<(GoalOp, usize)> {
        let b = self.lex.src.as_bytes();
        // ` DIGITS` from `at` (at most 19 digits, which cannot overflow u64): its value and end
        let number = |at: usize| -> Option<(u64, usize)> {
            let digits = b.get(at..)?.strip_prefix(b" ")?;
            let n = digits.iter().take(20).take_while(|d| d.is_ascii_digit()).count();
            if !(1..=19).contains(&n) {
                return None;
            }
            Some((digits[..n].iter().fold(0u64, |v, &d| v * 10 + u64::from(d - b'0')), at + 1 + n))
        };
        let follows = |at: usize, text: &[u8]| b[at..].starts_with(text).then_some(at + text.len());
        let mut op = GoalOp { kind, peer: 0, tag: 0, size: 0, cpu: 0, nic: 0 };
        let (size, at) = number(self.lex.pos)?;
        op.size = size;
        if kind == GoalKind::Calc {
            return Some((op, follows(at, b"\n")?));
        }
        let at = follows(at, if kind == GoalKind::Send { b"b to" } else { b"b from" })?;
        let (peer, at) = number(at)?;
        op.peer = u32::try_from(peer).ok().filter(|&p| p < self.num_ranks.map_or(0, |(n, _)| n))?;
        if let Some(end) = follows(at, b"\n") {
            return Some((op, end));
        }
        let (tag, at) = number(follows(at, b" tag")?)?;
        op.tag = u32::try_from(tag).ok().filter(|&t| t != ANY)?;
        Some((op, follows(at, b"\n")?))
    }

    /// `to` for a send, `from` for a recv, with a pointed message when they are swapped.
    fn expect_direction(&mut self, kind: GoalKind) -> PResult<()> {
        let (wanted, wrong, op, other_op) = match kind {
            GoalKind::Send => ("to", "from", "send", "recv"),
            _ => ("from", "to", "recv", "send"),
        };
        let t = self.next()?;
        match t.tok {
            Tok::Word(w) if w == wanted => Ok(()),
            Tok::Word(w) if w == wrong => {
                fail(t.pos, format!("expected '{wanted}' after the size of a {op}, found '{wrong}' (only a {other_op} uses '{wrong}')"))
            }
            other => fail(t.pos, format!("expected '{wanted}' after the size of a {op}, found {}", describe(other))),
        }
    }

    /// Optional `field value` pairs, each at most once and in the order of `allowed`, then the
    /// end of the line.
    fn parse_options(&mut self, op: &mut GoalOp, allowed: &[&'static str]) -> PResult<()> {
        let mut next_allowed = 0;
        loop {
            let t = self.next()?;
            let word = match t.tok {
                // Eof is sticky in the lexer, so consuming it here is harmless.
                Tok::Newline | Tok::Eof => return Ok(()),
                Tok::Word(w) => Some(w),
                _ => None,
            };
            let found = word.and_then(|w| allowed[next_allowed..].iter().position(|&a| a == w));
            let Some(offset) = found else {
                return fail(t.pos, unexpected_option(allowed, next_allowed, t.tok));
            };
            let field = allowed[next_allowed + offset];
            next_allowed += offset + 1;
            match field {
                "tag" => op.tag = self.parse_tag(op.kind)?,
                "cpu" => op.cpu = self.parse_u8("cpu")?,
                _ => op.nic = self.parse_u8("nic")?,
            }
        }
    }

    fn parse_peer(&mut self, kind: GoalKind) -> PResult<u32> {
        let n = self.expect_num("a rank number")?;
        if n.negative {
            return match (n.magnitude, kind) {
                (1, GoalKind::Recv) => Ok(ANY),
                (1, _) => fail(n.pos, "expected a destination rank, found '-1' (any source is only valid on recv)"),
                _ => fail(n.pos, format!("expected a rank number or -1, found '{}'", n.text)),
            };
        }
        let num_ranks = self.num_ranks.map_or(0, |(n, _)| n);
        if n.magnitude >= u64::from(num_ranks) {
            return fail(n.pos, out_of_range("peer rank", n.text, num_ranks));
        }
        Ok(n.magnitude as u32)
    }

    fn parse_tag(&mut self, kind: GoalKind) -> PResult<u32> {
        let n = self.expect_num("a tag (an integer, or -1 on recv)")?;
        if n.negative {
            return match (n.magnitude, kind) {
                (1, GoalKind::Recv) => Ok(ANY),
                (1, _) => fail(n.pos, "expected a non-negative tag, found '-1' (any tag is only valid on recv)"),
                _ => fail(n.pos, format!("expected a non-negative tag or -1, found '{}'", n.text)),
            };
        }
        // u32::MAX itself is ANY, so it cannot be written as a concrete tag.
        if n.magnitude >= u64::from(ANY) {
            return fail(n.pos, format!("tag {} is too large (at most {})", n.text, ANY - 1));
        }
        Ok(n.magnitude as u32)
    }

    fn parse_u8(&mut self, field: &'static str) -> PResult<u8> {
        let n = self.expect_unsigned(if field == "cpu" { "a cpu number (0..=255)" } else { "a nic number (0..=255)" })?;
        u8::try_from(n.magnitude).or_else(|_| fail(n.pos, format!("{field} {} does not fit in 0..=255", n.text)))
    }

    // --- small expectations --------------------------------------------------------------

    fn expect_num(&mut self, what: &str) -> PResult<Num<'a>> {
        let t = self.next()?;
        let Tok::Int(text) = t.tok else {
            return fail(t.pos, format!("expected {what}, found {}", describe(t.tok)));
        };
        let negative = text.starts_with('-');
        let digits = text.trim_start_matches('-');
        // Checked arithmetic instead of str::parse so the message can name the literal.
        let magnitude = digits.bytes().try_fold(0u64, |acc, d| acc.checked_mul(10)?.checked_add(u64::from(d - b'0')));
        match magnitude {
            Some(magnitude) => Ok(Num { pos: t.pos, text, negative, magnitude }),
            None => fail(t.pos, format!("integer '{text}' does not fit in 64 bits")),
        }
    }

    fn expect_unsigned(&mut self, what: &str) -> PResult<Num<'a>> {
        let n = self.expect_num(what)?;
        if n.negative {
            return fail(n.pos, format!("expected {what}, found negative '{}'", n.text));
        }
        Ok(n)
    }

    fn expect_word(&mut self, word: &str, context: &str) -> PResult<()> {
        let t = self.next()?;
        match t.tok {
            Tok::Word(w) if w == word => Ok(()),
            other => fail(t.pos, format!("expected '{word}' {context}, found {}", describe(other))),
        }
    }

    fn expect_end_of_statement(&mut self, context: &str) -> PResult<()> {
        let t = self.next()?;
        match t.tok {
            Tok::Newline | Tok::Eof => Ok(()),
            other => fail(t.pos, format!("expected end of line {context}, found {}", describe(other))),
        }
    }
}

/// Appends an op, making sure its index still fits the `u32` used by dependencies.
fn push_op(rank: &mut GoalRank, op: GoalOp, pos: usize) -> PResult<()> {
    if rank.ops.len() >= u32::MAX as usize {
        return fail(pos, format!("too many operations in one rank block (at most {})", u32::MAX));
    }
    rank.ops.push(op);
    Ok(())
}

fn out_of_range(what: &str, text: &str, num_ranks: u32) -> String {
    format!("{what} {text} out of range: num_ranks is {num_ranks}, so valid ranks are 0..={}", num_ranks - 1)
}

fn label_without_op(label: &str, found: Tok<'_>) -> String {
    format!("expected 'send', 'recv' or 'calc' after label '{label}:', found {}", describe(found))
}

/// "expected 'cpu', 'nic' or end of line, found 'tag'" plus a hint on misplaced fields.
fn unexpected_option(allowed: &[&str], next_allowed: usize, found: Tok<'_>) -> String {
    let mut expected: Vec<String> = allowed[next_allowed..].iter().map(|a| format!("'{a}'")).collect();
    expected.push("end of line".to_string());
    let last = expected.pop().unwrap_or_default();
    let list = if expected.is_empty() { last } else { format!("{} or {last}", expected.join(", ")) };
    let mut message = format!("expected {list}, found {}", describe(found));
    if let Tok::Word(w) = found {
        if allowed[..next_allowed].contains(&w) {
            let order: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
            let _ = write!(message, " (optional fields may appear once each, in the order {})", order.join(", "));
        } else if matches!(w, "tag" | "nic") && allowed == ["cpu"] {
            message.push_str(" (calc only takes 'cpu')");
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: GoalKind, peer: u32, tag: u32, size: u64) -> GoalOp {
        GoalOp { kind, peer, tag, size, cpu: 0, nic: 0 }
    }

    fn parse(text: &str) -> GoalSchedule {
        parse_goal(text, "t.goal").unwrap_or_else(|e| panic!("unexpected error: {e}"))
    }

    fn parse_err(text: &str) -> GoalError {
        match parse_goal(text, "t.goal") {
            Ok(s) => panic!("expected an error, parsed {s:?}"),
            Err(e) => e,
        }
    }

    /// Asserts the error position and that the message contains every fragment.
    fn assert_err(text: &str, line: usize, column: usize, fragments: &[&str]) {
        let e = parse_err(text);
        assert_eq!((e.line, e.column), (line, column), "position of: {e}");
        for f in fragments {
            assert!(e.message.contains(f), "message {:?} lacks {:?}", e.message, f);
        }
    }

    // --- LogGOPSim's binary_tree_16.goal ---------------------------------------------------

    /// The first ranks exactly as they appear in LogGOPSim's binary_tree_16.goal.
    const BINARY_TREE_16_HEAD: &str = "num_ranks 16

rank 0 {
l1: send 1b to 1 tag 0
l2: send 1b to 2 tag 0
l3: send 1b to 4 tag 0
l4: send 1b to 8 tag 0
}

rank 1 {
l1: recv 1b from 0 tag 0
l2: send 1b to 3 tag 0
l2 requires l1
l3: send 1b to 5 tag 0
l3 requires l1
l4: send 1b to 9 tag 0
l4 requires l1
}
";

    fn tree_parent(v: u32) -> u32 {
        v & !(1 << (31 - v.leading_zeros()))
    }

    fn tree_children(v: u32, n: u32) -> Vec<u32> {
        (0..32).map(|k| 1u32 << k).take_while(|&p| v + p < n).filter(|&p| p > v).map(|p| v + p).collect()
    }

    /// Generates binary_tree_16.goal in LogGOPSim's layout.
    fn binary_tree_text(n: u32) -> String {
        let mut s = format!("num_ranks {n}\n");
        for v in 0..n {
            s += &format!("\nrank {v} {{\n");
            let mut label = 1;
            if v > 0 {
                s += &format!("l1: recv 1b from {} tag 0\n", tree_parent(v));
                label = 2;
            }
            for c in tree_children(v, n) {
                s += &format!("l{label}: send 1b to {c} tag 0\n");
                if v > 0 {
                    s += &format!("l{label} requires l1\n");
                }
                label += 1;
            }
            s += "}\n";
        }
        s
    }

    #[test]
    fn binary_tree_16() {
        let text = binary_tree_text(16);
        assert!(text.starts_with(BINARY_TREE_16_HEAD), "generator disagrees with the real file");
        let s = parse(&text);
        assert_eq!(s.num_ranks, 16);
        assert_eq!(s.ranks.len(), 16);
        assert_eq!(s.ranks[0].ops, [1, 2, 4, 8].map(|p| op(GoalKind::Send, p, 0, 1)).to_vec());
        assert!(s.ranks[0].requires.is_empty());
        assert_eq!(
            s.ranks[1].ops,
            vec![op(GoalKind::Recv, 0, 0, 1), op(GoalKind::Send, 3, 0, 1), op(GoalKind::Send, 5, 0, 1), op(GoalKind::Send, 9, 0, 1),]
        );
        assert_eq!(s.ranks[1].requires, vec![(1, 0), (2, 0), (3, 0)]);
        for v in 1..16u32 {
            let rank = &s.ranks[v as usize];
            let children = tree_children(v, 16);
            assert_eq!(rank.ops[0], op(GoalKind::Recv, tree_parent(v), 0, 1), "rank {v}");
            let peers: Vec<u32> = rank.ops[1..].iter().map(|o| o.peer).collect();
            assert_eq!(peers, children, "rank {v}");
            let expected: Vec<(u32, u32)> = (1..=children.len() as u32).map(|i| (i, 0)).collect();
            assert_eq!(rank.requires, expected, "rank {v}");
            assert!(rank.irequires.is_empty());
        }
        assert_eq!(s.ranks[15].ops, vec![op(GoalKind::Recv, 7, 0, 1)]);
        assert_eq!(s.num_ops(), 30); // every rank but 0 receives once; every rank but 0 is sent to once
    }

    // --- accepted syntax ---------------------------------------------------------------------

    #[test]
    fn spec_example_with_all_features() {
        let text = "num_ranks 16            // must come before the first rank block
rank 0 {
l1: send 8b to 1 tag 0
l2: recv 8b from -1 tag -1
l3: calc 100 cpu 0
send 4b to 2 tag 5 cpu 1 nic 0
l3 requires l2
l4 irequires l1
l4: calc 7
}
";
        let mut text = text.to_string();
        for r in 1..16 {
            text += &format!("rank {r} {{\n}}\n");
        }
        let s = parse(&text);
        let r0 = &s.ranks[0];
        assert_eq!(
            r0.ops,
            vec![
                op(GoalKind::Send, 1, 0, 8),
                op(GoalKind::Recv, ANY, ANY, 8),
                op(GoalKind::Calc, 0, 0, 100),
                GoalOp { kind: GoalKind::Send, peer: 2, tag: 5, size: 4, cpu: 1, nic: 0 },
                op(GoalKind::Calc, 0, 0, 7),
            ]
        );
        // l4 is defined after its use: forward references are resolved at block end.
        assert_eq!(r0.requires, vec![(2, 1)]);
        assert_eq!(r0.irequires, vec![(4, 0)]);
        assert!(s.ranks[1..].iter().all(|r| *r == GoalRank::default()));
        assert_eq!(s.max_cpu(), 1);
        assert_eq!(s.max_nic(), 0);
        assert_eq!(s.num_ops(), 5);
    }

    #[test]
    fn optional_fields_defaults_and_subsets() {
        let s = parse(
            "num_ranks 3\nrank 0 {\nsend 1b to 1\nsend 2 b to 1 cpu 2\nsend 3b to 2 nic 4\nsend 4b to 2 tag 9 nic 1\nrecv 5b from 1 cpu 3 nic 2\ncalc 6\n}\nrank 1 {\n}\nrank 2 {\n}\n",
        );
        let ops = &s.ranks[0].ops;
        assert_eq!(ops[0], op(GoalKind::Send, 1, 0, 1));
        assert_eq!((ops[1].size, ops[1].cpu, ops[1].nic), (2, 2, 0));
        assert_eq!((ops[2].cpu, ops[2].nic), (0, 4));
        assert_eq!((ops[3].tag, ops[3].nic), (9, 1));
        assert_eq!((ops[4].kind, ops[4].peer, ops[4].cpu, ops[4].nic), (GoalKind::Recv, 1, 3, 2));
        assert_eq!(ops[5], op(GoalKind::Calc, 0, 0, 6));
        assert_eq!((s.max_cpu(), s.max_nic()), (3, 4));
    }

    #[test]
    fn comments_crlf_tabs_and_blank_lines() {
        let text = "/* header\n   spanning lines */\r\n\
                    num_ranks 2\r\n\
                    \r\n\
                    // a comment line\r\n\
                    rank 1 {\t// trailing comment\r\n\
                    \tl1 :\tcalc 5 /* inline */ cpu 1\r\n\
                    \r\n\
                    l2: send 0b to 0 tag 3 // after an op\r\n\
                    l2 requires l1\r\n\
                    }\r\n\
                    rank 0 {\n\
                    recv 0b from 1 tag 3\n\
                    }";
        let s = parse(text);
        assert_eq!(s.ranks[1].ops.len(), 2);
        assert_eq!(s.ranks[1].ops[0].cpu, 1);
        assert_eq!(s.ranks[1].requires, vec![(1, 0)]);
        assert_eq!(s.ranks[0].ops, vec![op(GoalKind::Recv, 1, 3, 0)]);
    }

    #[test]
    fn ops_in_the_common_form_read_as_token_by_token() {
        // single spaces take the byte-level path (quick_op); doubled ones the tokens
        let u64_max = u64::MAX.to_string();
        let sizes = ["0", "8", "007", "9999999999999999999", u64_max.as_str(), "18446744073709551616"];
        let ends = ["", " tag 0", " tag 4294967294", " tag 4294967295", " tag -1", " cpu 1", " tag 3 nic 2", " // c"];
        for size in sizes {
            for (kind, dir) in [("send", "to"), ("recv", "from")] {
                for peer in ["0", "2", "3", "-1", "12345678901234567890"] {
                    for end in ends {
                        let line = format!("{kind} {size}b {dir} {peer}{end}");
                        for text in [format!("{HEAD}l0: {line}\n}}\n"), format!("{HEAD}{line}\n}}\n")] {
                            let slow = text.replace(' ', "  ");
                            let (a, b) = (parse_goal(&text, "t.goal"), parse_goal(&slow, "t.goal"));
                            assert_eq!(a.as_ref().ok(), b.as_ref().ok(), "{line}");
                            assert_eq!(a.map_err(|e| e.message), b.map_err(|e| e.message), "{line}");
                        }
                    }
                }
            }
            let calc = format!("{HEAD}calc {size}\n}}\n");
            let slow = calc.replace("calc ", "calc  ");
            assert_eq!(parse_goal(&calc, "t.goal").map_err(|e| e.message), parse_goal(&slow, "t.goal").map_err(|e| e.message));
        }
        for dep in [
            "b requires a",
            "b irequires a",
            "a requires b_2",
            "b requires a9",
            "b requires 9",
            "b requires a x",
            "b requires",
            "sendx: calc 1",
        ] {
            let text = format!("{HEAD}a: calc 1\nb: calc 2\nb_2: recv 8b from 0 tag 1\n{dep}\n}}\n");
            let slow = text.replace(' ', "  ");
            let (a, b) = (parse_goal(&text, "t.goal"), parse_goal(&slow, "t.goal"));
            assert_eq!(a.as_ref().ok(), b.as_ref().ok(), "{dep}");
            assert_eq!(a.map_err(|e| e.message), b.map_err(|e| e.message), "{dep}");
        }
    }

    #[test]
    fn compact_forms_accepted_by_txt2bin() {
        // txt2bin needs no newline after `num_ranks N`, `rank N {` or `}`.
        let s = parse("num_ranks 2 rank 0{ calc 5\n} rank 1 { }");
        assert_eq!(s.ranks[0].ops, vec![op(GoalKind::Calc, 0, 0, 5)]);
        assert!(s.ranks[1].ops.is_empty());
    }

    use crate::program::goal_program::{parse_goal_program, GoalProgram};

    /// Each rank's finishing time, the program run on LogGOPSim's defaults.
    fn finish_times(p: GoalProgram) -> Vec<crate::time::Time> {
        use crate::network::{LogGOPS, Network};
        let mut e = crate::engine::Engine::new(p, Network::uniform(LogGOPS::loggopsim_defaults()), crate::noise::Noise::none()).unwrap();
        e.run().unwrap();
        (0..e.num_ranks()).map(|r| e.finish_time(r)).collect()
    }

    #[test]
    fn a_program_read_rank_by_rank_runs_as_the_whole_schedule() {
        let dissemination = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/dissemination_16.goal")).unwrap();
        // blocks out of order (3 before 1 and 2, then 0 last), several CPUs and NICs, both kinds of dependency
        let shuffled = "num_ranks 4\nrank 3 {\nr: recv 100b from 2 tag 1 cpu 1\ns: send 10b to 0 tag 2 nic 1\ns requires r\n}\n\
                        rank 1 {\nc: calc 500\ns: send 2000b to 2 tag 3\ns irequires c\n}\n\
                        rank 2 {\na: recv 2000b from 1 tag 3\nb: send 100b to 3 tag 1\nb requires a\n}\n\
                        rank 0 {\nr: recv 10b from -1 tag -1\nc: calc 7 cpu 2\nc requires r\n}\n";
        for text in [dissemination.as_str(), shuffled, "num_ranks 1\nrank 0 {\n}\n"] {
            let whole = finish_times(GoalProgram::new(&parse_goal(text, "t.goal").unwrap()));
            assert_eq!(finish_times(parse_goal_program(text, "t.goal").unwrap()), whole);
            assert!(text.starts_with("num_ranks 1") || whole.iter().any(|&t| t > 0));
        }
        // and it is refused where the whole schedule is, with the same error
        for bad in [
            "num_ranks 3\nrank 2 {\n}\nrank 0 {\n}\n",
            "num_ranks 2\nrank 1 {\n}\nrank 1 {\n}\n",
            "num_ranks 4000000000\nrank 0 {\n}\n",
            "rank 0 {\n}\n",
            "num_ranks 2\nrank 0 {\nsend 1b to 5 tag 0\n}\n",
        ] {
            let e = parse_goal(bad, "t.goal").unwrap_err();
            assert_eq!(parse_goal_program(bad, "t.goal").err(), Some(e), "{bad}");
        }
    }

    #[test]
    fn blocks_in_any_order_land_at_their_rank() {
        let s = parse("num_ranks 3\nrank 1 {\ncalc 2\n}\nrank 0 {\ncalc 1\n}\nrank 2 {\ncalc 3\n}\n");
        assert_eq!(s.ranks.iter().map(|r| r.ops[0].size).collect::<Vec<_>>(), vec![1, 2, 3]);
        let s = parse("num_ranks 3\nrank 0 {\ncalc 1\n}\nrank 2 {\ncalc 3\n}\nrank 1 {\ncalc 2\n}\n");
        assert_eq!(s.ranks.iter().map(|r| r.ops[0].size).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_err("num_ranks 3\nrank 0 {\n}\nrank 2 {\n}\nrank 0 {\n}\n", 6, 6, &["duplicate block for rank 0", "line 2"]);
    }

    #[test]
    fn labels_are_per_block() {
        let s = parse("num_ranks 2\nrank 0 {\na: calc 1\nb: calc 2\nb requires a\n}\nrank 1 {\nb: calc 3\na: calc 4\nb irequires a\n}\n");
        assert_eq!(s.ranks[0].requires, vec![(1, 0)]);
        assert_eq!(s.ranks[1].irequires, vec![(0, 1)]);
    }

    #[test]
    fn numbered_labels_are_names_too() {
        // `l1` and `l01` are different labels; so are `l0` and `l`; a huge number is a name like any
        let s = parse(
            "num_ranks 2\nrank 0 {\nl01: calc 1\nl1: calc 2\nl0: calc 3\nl: calc 4\nl99999999999: calc 5\n\
             l1 requires l01\nl requires l0\nl0 irequires l99999999999\n}\nrank 1 {\nl3: calc 1\nl2: calc 2\nl2 requires l3\n}\n",
        );
        assert_eq!(s.ranks[0].requires, vec![(1, 0), (3, 2)]);
        assert_eq!(s.ranks[0].irequires, vec![(2, 4)]);
        assert_eq!(s.ranks[1].requires, vec![(1, 0)]);
        // a numbered label of one block is not defined in the next
        assert_err("num_ranks 2\nrank 0 {\nl5: calc 1\n}\nrank 1 {\nl6: calc 1\nl6 requires l5\n}\n", 7, 13, &["undefined label 'l5'"]);
        assert_err("num_ranks 1\nrank 0 {\nl5: calc 1\nl5: calc 2\n}\n", 4, 1, &["duplicate label 'l5'", "line 3"]);
    }

    // --- writer --------------------------------------------------------------------------------

    #[test]
    fn write_goal_canonical_text() {
        let s = GoalSchedule {
            num_ranks: 2,
            ranks: vec![
                GoalRank {
                    ops: vec![
                        GoalOp { kind: GoalKind::Send, peer: 1, tag: 7, size: 8, cpu: 0, nic: 2 },
                        GoalOp { kind: GoalKind::Calc, peer: 0, tag: 0, size: 100, cpu: 3, nic: 0 },
                    ],
                    requires: vec![(1, 0)],
                    irequires: vec![(0, 1)],
                },
                GoalRank { ops: vec![op(GoalKind::Recv, ANY, ANY, 8)], ..GoalRank::default() },
            ],
        };
        let text = write_goal(&s);
        assert_eq!(
            text,
            "num_ranks 2\n\nrank 0 {\nl0: send 8b to 1 tag 7 nic 2\nl1: calc 100 cpu 3\nl1 requires l0\nl0 irequires l1\n}\n\n\
             rank 1 {\nl0: recv 8b from -1 tag -1\n}\n\n"
        );
        assert_eq!(parse(&text), s);
    }

    #[test]
    fn round_trip_binary_tree() {
        let s = parse(&binary_tree_text(16));
        assert_eq!(parse(&write_goal(&s)), s);
    }

    /// A deterministic schedule exercising every field, ANY values and both dependency kinds.
    fn big_schedule(num_ranks: u32, ops_per_rank: u32) -> GoalSchedule {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let ranks = (0..num_ranks)
            .map(|_| {
                let mut rank = GoalRank::default();
                for i in 0..ops_per_rank {
                    let v = rand();
                    let peer = ((v >> 8) % u64::from(num_ranks)) as u32;
                    let op = match v % 3 {
                        0 => GoalOp {
                            kind: GoalKind::Send,
                            peer,
                            tag: (v >> 40) as u32 % 100,
                            size: v >> 50,
                            cpu: (v >> 20) as u8 % 4,
                            nic: (v >> 24) as u8 % 3,
                        },
                        1 => GoalOp {
                            kind: GoalKind::Recv,
                            peer: if v & 64 == 0 { ANY } else { peer },
                            tag: if v & 128 == 0 { ANY } else { 5 },
                            size: v >> 45,
                            cpu: 0,
                            nic: (v >> 30) as u8 % 2,
                        },
                        _ => GoalOp { kind: GoalKind::Calc, peer: 0, tag: 0, size: v >> 20, cpu: (v >> 4) as u8, nic: 0 },
                    };
                    rank.ops.push(op);
                    if i > 0 {
                        rank.requires.push((i, i - 1));
                    }
                    if i > 1 && v & 16 == 0 {
                        rank.irequires.push((i, (v >> 33) as u32 % i));
                    }
                }
                rank
            })
            .collect();
        GoalSchedule { num_ranks, ranks }
    }

    #[test]
    fn round_trip_200k_ops() {
        let s = big_schedule(100, 2000);
        assert_eq!(s.num_ops(), 200_000);
        let text = write_goal(&s);
        let back = parse_goal(&text, "big.goal").unwrap();
        assert_eq!(back, s);
    }

    // --- file reading and error formatting ----------------------------------------------------

    #[test]
    fn read_goal_file_ok_and_io_error() {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("idlewave_goal_test_{}.goal", std::process::id()));
        std::fs::write(&path, binary_tree_text(16)).unwrap();
        let s = read_goal_text_file(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(s.num_ops(), 30);

        let missing = dir.join("idlewave_goal_test_does_not_exist.goal");
        let e = read_goal_text_file(&missing).unwrap_err();
        assert_eq!((e.line, e.column), (0, 0));
        assert_eq!(e.file, missing.display().to_string());
        assert!(!e.message.is_empty());
        assert_eq!(e.to_string(), format!("{}: {}", e.file, e.message));
    }

    #[test]
    fn read_goal_file_invalid_utf8() {
        let path = std::env::temp_dir().join(format!("idlewave_goal_utf8_{}.goal", std::process::id()));
        std::fs::write(&path, b"num_ranks 1\nrank 0 {\n  \xff\n}\n").unwrap();
        let e = read_goal_text_file(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!((e.line, e.column), (3, 3));
        assert!(e.message.contains("UTF-8"));
    }

    #[test]
    fn display_format() {
        let text = "num_ranks 2\nrank 0 {\n\n\n\nl1: calc 3\nl2: send 8 \t k to 1\n}\n";
        let e = parse_goal(text, "x.goal").unwrap_err();
        assert_eq!(e.to_string(), "x.goal:7:14: expected 'b' after the size, found 'k'");
    }

    // --- errors ----------------------------------------------------------------------------------

    const HEAD: &str = "num_ranks 2\nrank 1 {\n}\nrank 0 {\n"; // the op under test is on line 5

    fn in_block(line: &str) -> String {
        format!("{HEAD}{line}\n}}\n")
    }

    #[test]
    fn error_missing_b() {
        assert_err(&in_block("send 8 to 1"), 5, 8, &["expected 'b' after the size", "found 'to'"]);
        assert_err(&in_block("send 8kb to 1"), 5, 7, &["expected 'b'", "found 'kb'"]);
    }

    #[test]
    fn error_wrong_direction() {
        assert_err(&in_block("send 8b from 1"), 5, 9, &["expected 'to'", "found 'from'"]);
        assert_err(&in_block("recv 8b to 1"), 5, 9, &["expected 'from'", "found 'to'"]);
        assert_err(&in_block("recv 8b"), 5, 8, &["expected 'from'", "found end of line"]);
    }

    #[test]
    fn error_bad_numbers() {
        assert_err(&in_block("send xb to 1"), 5, 6, &["expected the message size", "found 'xb'"]);
        assert_err(&in_block("calc 1.5"), 5, 7, &["expected 'cpu' or end of line", "found '.'"]);
        assert_err(&in_block("send -8b to 1"), 5, 6, &["message size", "negative '-8'"]);
        assert_err(&in_block("calc -3"), 5, 6, &["calc duration", "negative '-3'"]);
        assert_err(&in_block("send 18446744073709551616b to 1"), 5, 6, &["'18446744073709551616' does not fit in 64 bits"]);
        // u64::MAX itself is fine.
        let s = parse(&in_block("send 18446744073709551615b to 1"));
        assert_eq!(s.ranks[0].ops[0].size, u64::MAX);
        assert_err(&in_block("send 1b to 1 cpu 300"), 5, 18, &["cpu 300 does not fit in 0..=255"]);
        assert_err(&in_block("send 1b to 1 nic 256"), 5, 18, &["nic 256"]);
        assert_err(&in_block("send 1b to 1 tag 4294967295"), 5, 18, &["tag 4294967295 is too large"]);
        assert_err(&in_block("send 1b to 1 tag -1"), 5, 18, &["found '-1'", "only valid on recv"]);
        assert_err(&in_block("recv 1b from 1 tag -2"), 5, 20, &["found '-2'"]);
        assert_err(&in_block("send 1b to -1"), 5, 12, &["found '-1'", "only valid on recv"]);
        assert_err(&in_block("recv 1b from -5"), 5, 14, &["found '-5'"]);
    }

    #[test]
    fn error_options_order_and_unknown() {
        assert_err(
            &in_block("send 1b to 1 cpu 1 tag 2"),
            5,
            20,
            &["expected 'nic' or end of line, found 'tag'", "in the order 'tag', 'cpu', 'nic'"],
        );
        assert_err(&in_block("send 1b to 1 tag 1 tag 2"), 5, 20, &["expected 'cpu', 'nic' or end of line, found 'tag'"]);
        assert_err(&in_block("send 1b to 1 flag 2"), 5, 14, &["expected 'tag', 'cpu', 'nic' or end of line, found 'flag'"]);
        assert_err(&in_block("calc 5 nic 1"), 5, 8, &["expected 'cpu' or end of line, found 'nic'", "calc only takes 'cpu'"]);
        assert_err(&in_block("calc 5 cpu 1 cpu 2"), 5, 14, &["expected end of line, found 'cpu'"]);
    }

    #[test]
    fn error_unknown_keyword_and_labels() {
        assert_err(&in_block("sned 1b to 1"), 5, 1, &["unknown statement", "found 'sned' followed by '1'"]);
        assert_err(&in_block("l1:"), 5, 4, &["expected 'send', 'recv' or 'calc' after label 'l1:'", "found end of line"]);
        assert_err(&in_block("l1: l2: calc 1"), 5, 5, &["after label 'l1:'", "found 'l2'"]);
        assert_err(&in_block("@ calc 1"), 5, 1, &["found '@'"]);
        assert_err(&in_block("l1 requires"), 5, 12, &["expected a label after 'requires', found end of line"]);
        assert_err(&in_block("l1 requires l2 l3"), 5, 16, &["expected end of line after the dependency, found 'l3'"]);
    }

    #[test]
    fn error_undefined_and_duplicate_labels() {
        let text = format!("{HEAD}l1: calc 1\n\nl1 requires l9\n}}\n");
        assert_err(&text, 7, 13, &["undefined label 'l9'", "rank 0"]);
        let text = format!("{HEAD}l1: calc 1\nl2 irequires l1\n}}\n");
        assert_err(&text, 6, 1, &["undefined label 'l2'"]);
        let text = format!("{HEAD}l1: calc 1\nl1: calc 2\n}}\n");
        assert_err(&text, 6, 1, &["duplicate label 'l1'", "line 5"]);
        // A label from another block is not visible.
        let text = "num_ranks 2\nrank 0 {\nl1: calc 1\n}\nrank 1 {\nl2: calc 1\nl2 requires l1\n}\n";
        assert_err(text, 7, 13, &["undefined label 'l1'", "rank 1"]);
    }

    #[test]
    fn error_block_structure() {
        assert_err("num_ranks 1\nrank 0 {\ncalc 1\n", 4, 1, &["unterminated rank block opened at line 2", "found end of file"]);
        assert_err("num_ranks 1\nrank 0 {\ncalc 1", 3, 7, &["unterminated rank block opened at line 2"]);
        assert_err("num_ranks 1\n}\n", 2, 1, &["found '}' without an open rank block"]);
        assert_err("num_ranks 1\nsend 1b to 0\n", 2, 1, &["operation outside a rank block", "found 'send'"]);
        assert_err("num_ranks 1\nl1: calc 3\n", 2, 1, &["expected 'num_ranks' or 'rank', found 'l1'"]);
        // A file that is not a schedule: the kind of its first token, never its text.
        for (text, kind) in [
            ("password=hunter2\n", "a word of 8 characters"),
            ("root:$6$SECRET:19000\n", "a word of 4 characters"),
            ("12345 secret\n", "a number of 5 digits"),
            ("{\"token\": \"s3cr3t\"}\n", "'{'"),
        ] {
            let e = parse_err(text);
            assert!(e.message.contains("not a GOAL schedule") && e.message.contains(kind), "{}", e.message);
            for secret in ["password", "hunter2", "root", "SECRET", "12345", "token", "s3cr3t"] {
                assert!(!e.message.contains(secret), "{:?} echoes {secret:?}", e.message);
            }
        }
        assert_err("rank 0 {\n}\nnum_ranks 1\n", 1, 1, &["rank block before 'num_ranks'"]);
        assert_err(
            "num_ranks 2\nrank 0 {\nrank 1 {\n}\n}\n",
            3,
            1,
            &["expected '}' to close the rank block opened at line 2", "found 'rank'"],
        );
        assert_err("num_ranks 1\nrank 0\n{\n}\n", 2, 7, &["expected '{' after 'rank 0', found end of line"]);
        assert_err("num_ranks 1\nrank 0 { calc 1 }\n", 2, 17, &["expected 'cpu' or end of line, found '}'"]);
        assert_err("num_ranks 1\n/* open\nrank 0 {\n}\n", 2, 1, &["unterminated comment"]);
    }

    #[test]
    fn error_num_ranks_and_rank_ids() {
        assert_err("num_ranks 0\n", 1, 11, &["expected a positive number of ranks, found '0'"]);
        assert_err("num_ranks -2\n", 1, 11, &["found negative '-2'"]);
        assert_err("num_ranks 4294967296\n", 1, 11, &["too large"]);
        assert_err("num_ranks x\n", 1, 11, &["expected the number of ranks", "found 'x'"]);
        assert_err("num_ranks 1\nnum_ranks 1\n", 2, 1, &["duplicate 'num_ranks'", "line 1"]);
        assert_err("", 1, 1, &["expected 'num_ranks N', found end of file"]);
        assert_err("// nothing\n", 2, 1, &["expected 'num_ranks N'"]);
        assert_err("num_ranks 2\nrank 2 {\n}\n", 2, 6, &["rank 2 out of range", "0..=1"]);
        assert_err("num_ranks 2\nrank 0 {\n}\nrank 0 {\n}\n", 4, 6, &["duplicate block for rank 0", "line 2"]);
        assert_err("num_ranks 3\nrank 0 {\n}\nrank 2 {\n}\n", 1, 1, &["no 'rank 1' block"]);
        assert_err("num_ranks 3\nrank 0 {\n}\nrank 1 {\n}\n", 1, 1, &["no 'rank 2' block"]);
        // A huge rank count in a tiny file must fail fast rather than allocate per rank.
        assert_err("num_ranks 4294967295\nrank 4294967294 {\n}\n", 1, 1, &["no 'rank 0' block"]);
    }

    #[test]
    fn error_peer_out_of_range() {
        assert_err(&in_block("send 1b to 2 tag 0"), 5, 12, &["peer rank 2 out of range", "num_ranks is 2"]);
        assert_err(&in_block("recv 1b from 99999999999"), 5, 14, &["peer rank 99999999999 out of range"]);
    }

    #[test]
    fn error_columns_count_characters() {
        // The column is in characters, not bytes, after a non-ASCII comment.
        let text = "num_ranks 1 /* ünïcödé */ rank 0 { calc x\n}\n";
        assert_err(text, 1, 41, &["found 'x'"]);
    }

    #[test]
    fn the_rank_count_is_read_from_the_beginning_of_the_file() {
        let dir = std::env::temp_dir().join(format!("idlewave-goal-ranks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ranks = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            read_goal_text_ranks(&p)
        };
        assert_eq!(ranks("a.goal", "// two\n\nnum_ranks 2\nrank 0 {\n}\nrank 1 {\n}\n"), Ok(2));
        // a header behind more than the prefix of comments: the whole file settles it
        let long = format!("/*{}*/ num_ranks 123456\n", "x".repeat(70 << 10));
        assert_eq!(ranks("b.goal", &long), Ok(123456));
        // a number cut by the prefix is read whole
        let cut = format!("{}\nnum_ranks 123456\n", "/".repeat((64 << 10) - 14));
        assert_eq!(cut.find("123456").map(|i| i + 3), Some(64 << 10));
        assert_eq!(ranks("c.goal", &cut), Ok(123456));
        let e = ranks("d.goal", "rank 0 {\n}\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 1), "{e}");
        let e = ranks("e.goal", &format!("secret words\n{}", "x".repeat(70 << 10))).unwrap_err();
        assert!(e.message.starts_with("not a GOAL schedule") && !e.message.contains("secret"), "{e}");
        let e = ranks("f.goal", "num_ranks 0\n").unwrap_err();
        assert!(e.message.contains("positive"), "{e}");
        assert_eq!(read_goal_text_ranks(&dir.join("missing.goal")).unwrap_err().line, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Python bindings (module `idlewave._engine`). Thin: parse, call, convert.

use crate::bench;
use crate::engine::SimError;
use crate::network::{LogGOPS, Network};
use crate::noise::NoiseSpec;
use crate::program::goal::write_goal;
use crate::program::stream::export_goal;
use crate::scenario::load::{Loaded, Node, Origin, Val};
use crate::sim::{self, WorkloadSpec, WorkloadVisitor};
use crate::time::{to_seconds, Time};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use result::PyRunResult;

mod result;

create_exception!(
    _engine,
    SimulationError,
    PyValueError,
    "A scenario that cannot be simulated: bad input, deadlock, unmatched messages, or too large."
);

create_exception!(_engine, DeadlockError, SimulationError, "Ranks wait forever; the message names them and what they wait on.");
create_exception!(_engine, UnmatchedError, SimulationError, "Every rank finished but messages or receives were left unmatched.");
create_exception!(_engine, MemoryLimitError, SimulationError, "The run would need more memory than allowed; refused before allocating.");
create_exception!(_engine, TimeLimitError, SimulationError, "Simulated time passed the engine's limit (2^62 ps, about 53 days).");

/// The interrupt check for long loops in the engine: Ctrl-C (any pending signal) stops them.
fn no_signal() -> bool {
    Python::with_gil(|py| py.check_signals().is_ok())
}

fn err(msg: String) -> PyErr {
    SimulationError::new_err(msg)
}

/// A scenario error as `idlewave.scenario.ScenarioError` (a ValueError with
/// `source`, `key`, `line`, `column`, `kind`): the one class every reader of
/// scenarios raises, so a message reads the same through any of them.
fn scenario_error(py: Python<'_>, e: &crate::scenario::ScenarioError) -> PyErr {
    let make = || -> PyResult<PyErr> {
        let class = py.import("idlewave.scenario")?.getattr("ScenarioError")?;
        let kw = PyDict::new(py);
        kw.set_item("source", &e.source_name)?;
        kw.set_item("key", &e.key)?;
        kw.set_item("line", e.line)?;
        kw.set_item("column", e.column)?;
        kw.set_item("kind", e.kind.name())?;
        kw.set_item("message", &e.message)?;
        Ok(PyErr::from_value(class.call((e.to_string(),), Some(&kw))?))
    };
    make().unwrap_or_else(|err| err)
}

/// A Python value (dict, list, str, int, float, bool, None) as a scenario
/// value tree; `key` is its dotted path, named when a value cannot be read.
fn node_of(v: &Bound<'_, PyAny>, source: &str, key: &str) -> PyResult<Node> {
    use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple};
    let child = |k: &str| if key.is_empty() { k.to_string() } else { format!("{key}.{k}") };
    let val = if v.is_none() {
        Val::Null
    } else if let Ok(b) = v.downcast::<PyBool>() {
        Val::Bool(b.is_true())
    } else if v.is_instance_of::<PyInt>() {
        // any size: a range check, not a conversion, refuses what does not fit
        let text = v.str()?.to_str()?.to_string();
        match text.parse() {
            Ok(i) => Val::Int(i),
            Err(_) => {
                let e = crate::scenario::ScenarioError {
                    source_name: source.to_string(),
                    key: key.to_string(),
                    line: None,
                    column: None,
                    kind: crate::scenario::ErrorKind::Value,
                    message: format!("{text} is beyond any integer a scenario can hold (128 bits)"),
                };
                return Err(scenario_error(v.py(), &e));
            }
        }
    } else if let Ok(f) = v.downcast::<PyFloat>() {
        Val::Float(f.value())
    } else if let Ok(s) = v.downcast::<PyString>() {
        Val::Str(s.to_str()?.to_string())
    } else if let Ok(d) = v.downcast::<PyDict>() {
        let mut out = Vec::with_capacity(d.len());
        for (k, x) in d.iter() {
            let k = k.str()?.to_str()?.to_string();
            let node = node_of(&x, source, &child(&k))?;
            out.push((k, node));
        }
        Val::Table(out)
    } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items = v.try_iter()?.enumerate().map(|(i, x)| node_of(&x?, source, &format!("{key}[{i}]")));
        Val::Array(items.collect::<PyResult<_>>()?)
    } else {
        // a Path or another object: its text (the checks then judge it as a string)
        Val::Str(v.str()?.to_str()?.to_string())
    };
    Ok(Node { span: None, v: val })
}

/// Overrides (dotted key -> value) from a Python dict.
fn overrides_of(o: Option<&Bound<'_, PyAny>>, source: &str) -> PyResult<Vec<(String, Node)>> {
    let Some(o) = o.filter(|o| !o.is_none()) else { return Ok(Vec::new()) };
    let d = o.downcast::<PyDict>()?;
    d.iter()
        .map(|(k, v)| {
            let k = k.str()?.to_str()?.to_string();
            let node = node_of(&v, source, &k)?;
            Ok((k, node))
        })
        .collect()
}

/// A checked scenario: read from TOML text (or a dict), every default filled
/// in, its rules checked. Errors are `idlewave.scenario.ScenarioError`,
/// naming the source, key and (for text) line and column.
#[pyclass(module = "idlewave._engine", name = "Scenario")]
struct PyScenario {
    source: String,
    text: Option<String>,
    base_dir: std::path::PathBuf,
    raw: Node,
    overrides: Vec<(String, Node)>,
    loaded: Loaded,
}

impl PyScenario {
    fn build(
        py: Python<'_>,
        source: String,
        text: Option<String>,
        base_dir: Option<std::path::PathBuf>,
        raw: Option<Node>,
        overrides: Vec<(String, Node)>,
    ) -> PyResult<Self> {
        let base_dir = base_dir.unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
        let origin = Origin { source: &source, text: text.as_deref(), base_dir: &base_dir };
        let fail = |e: crate::scenario::ScenarioError| scenario_error(py, &e);
        let raw = match raw {
            Some(r) => r,
            None => crate::scenario::load::read_toml(text.as_deref().unwrap_or_default(), &source).map_err(fail)?,
        };
        let loaded = Self::check(&raw, &overrides, &origin).map_err(fail)?;
        Ok(PyScenario { source, text, base_dir, raw, overrides, loaded })
    }

    fn check(raw: &Node, overrides: &[(String, Node)], origin: &Origin) -> Result<Loaded, crate::scenario::ScenarioError> {
        let mut raw = raw.clone();
        crate::scenario::load::apply_overrides(&mut raw, overrides, origin)?;
        crate::scenario::load::finish(raw, origin)
    }

    fn origin(&self) -> Origin<'_> {
        Origin { source: &self.source, text: self.text.as_deref(), base_dir: &self.base_dir }
    }

    /// The engine's configuration of the run; its refusals placed at their key.
    fn config(&self, py: Python<'_>) -> PyResult<sim::Config> {
        self.loaded.scenario.config().map_err(|e| {
            let e = crate::scenario::load::locate(e, &self.origin(), &self.loaded.spans);
            if e.kind == crate::scenario::ErrorKind::Memory {
                // refused for memory, as the run's own estimate is, and at its key
                let key = e.key.clone();
                return with_attrs(MemoryLimitError::new_err(e.to_string()), |_, v| v.setattr("key", key));
            }
            scenario_error(py, &e)
        })
    }
}

#[pymethods]
impl PyScenario {
    /// From TOML text; `source` names it in messages, `base_dir` is where
    /// relative paths in it resolve (default: the current directory).
    #[new]
    #[pyo3(signature = (text, source="<string>".to_string(), base_dir=None, overrides=None))]
    fn new(
        py: Python<'_>,
        text: String,
        source: String,
        base_dir: Option<std::path::PathBuf>,
        overrides: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let overrides = overrides_of(overrides, &source)?;
        Self::build(py, source, Some(text), base_dir, None, overrides)
    }

    /// From a TOML file; relative paths in it resolve against its directory.
    #[staticmethod]
    #[pyo3(signature = (path, overrides=None))]
    fn from_file(py: Python<'_>, path: std::path::PathBuf, overrides: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let source = path.display().to_string();
        let text = crate::files::read_text(&source, "scenario").map_err(|m| {
            let e = crate::scenario::ScenarioError {
                source_name: String::new(),
                key: String::new(),
                line: None,
                column: None,
                kind: crate::scenario::ErrorKind::Read,
                message: m.to_string(),
            };
            let err = scenario_error(py, &e);
            // the message names the file already; the error's source says it too
            let _ = err.value(py).setattr("source", &source);
            err
        })?;
        let dir = std::path::absolute(&path).ok().and_then(|p| p.parent().map(|d| d.to_path_buf()));
        let overrides = overrides_of(overrides, &source)?;
        Self::build(py, source, Some(text), dir, None, overrides)
    }

    /// From a dict in the scenario file's layout (or a checked document).
    #[staticmethod]
    #[pyo3(signature = (doc, source="<dict>".to_string(), base_dir=None, overrides=None))]
    fn from_dict(
        py: Python<'_>,
        doc: &Bound<'_, PyAny>,
        source: String,
        base_dir: Option<std::path::PathBuf>,
        overrides: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (doc, overrides) = (node_of(doc, &source, "")?, overrides_of(overrides, &source)?);
        Self::build(py, source, None, base_dir, Some(doc), overrides)
    }

    /// Sets one dotted key (as `--set key.path=value`) and checks the scenario again.
    fn set(&mut self, py: Python<'_>, key: String, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut overrides = self.overrides.clone();
        let node = node_of(value, &self.source, &key)?;
        overrides.push((key, node));
        self.loaded = Self::check(&self.raw, &overrides, &self.origin()).map_err(|e| scenario_error(py, &e))?;
        self.overrides = overrides;
        Ok(())
    }

    /// The checked document (every default filled in) as JSON.
    fn to_json(&self) -> String {
        self.loaded.doc.to_string()
    }

    /// The checked document as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (self.to_json(),))
    }

    #[getter]
    fn source(&self) -> &str {
        &self.source
    }

    fn __repr__(&self) -> String {
        format!("<Scenario {}>", self.source)
    }
}

/// TOML text as a dict (datetimes as their text); a syntax error is a
/// ScenarioError at `source:line:column`.
#[pyfunction]
fn read_toml<'py>(py: Python<'py>, text: &str, source: &str) -> PyResult<Bound<'py, PyAny>> {
    let node = crate::scenario::load::read_toml(text, source).map_err(|e| scenario_error(py, &e))?;
    py.import("json")?.call_method1("loads", (crate::scenario::load::to_json(&node).to_string(),))
}

/// The platform presets compiled in: (name, its first comment line).
#[pyfunction]
fn platform_presets() -> Vec<(&'static str, String)> {
    crate::scenario::load::PRESETS
        .iter()
        .map(|(name, text)| (*name, text.lines().next().unwrap_or("").trim_start_matches(['#', ' ']).trim().to_string()))
        .collect()
}

/// Overrides (dotted key -> value) over a scenario dict, unchecked: the dict
/// they give (a sweep's point, before it is checked). Errors name the key.
#[pyfunction]
#[pyo3(signature = (raw, overrides, source="<dict>".to_string()))]
fn apply_overrides<'py>(
    py: Python<'py>,
    raw: &Bound<'py, PyAny>,
    overrides: &Bound<'py, PyAny>,
    source: String,
) -> PyResult<Bound<'py, PyAny>> {
    let mut node = node_of(raw, &source, "")?;
    let origin = Origin { source: &source, text: None, base_dir: std::path::Path::new("/") };
    crate::scenario::load::apply_overrides(&mut node, &overrides_of(Some(overrides), &source)?, &origin)
        .map_err(|e| scenario_error(py, &e))?;
    let json = crate::scenario::load::to_json(&node).to_string();
    py.import("json")?.call_method1("loads", (json,))
}

/// The block of a process grid a node of `per_node` ranks holds.
#[pyfunction]
fn node_blocks(grid: Vec<u32>, per_node: u32) -> PyResult<Vec<u32>> {
    crate::network::mapping::node_blocks(&grid, per_node).map_err(PyValueError::new_err)
}

/// The node of every rank when each node holds one `block` of the grid (on a torus, if given).
#[pyfunction]
#[pyo3(signature = (grid, block, torus=None))]
fn cartesian_nodes(grid: Vec<u32>, block: Vec<u32>, torus: Option<[u32; 3]>) -> PyResult<Vec<u32>> {
    crate::network::mapping::cartesian(&grid, &block, torus).map_err(PyValueError::new_err)
}

/// The node each rank runs on under a scenario's mapping.
#[pyfunction]
fn rank_nodes(py: Python<'_>, scenario: PyRef<'_, PyScenario>) -> PyResult<Vec<u32>> {
    let shape = scenario.loaded.scenario.workload.shape();
    let ranks = shape.ranks.ok_or_else(|| err("the workload's rank count is known only when it runs".into()))?;
    let net = scenario.config(py)?.network;
    match net.platform {
        Some(mut p) => {
            p.prepare_for(ranks).map_err(SimError::Rule)?;
            Ok((0..ranks).map(|r| p.node(r)).collect())
        }
        None => Ok((0..ranks).map(|r| r / net.ranks_per_node).collect()),
    }
}

/// Links between nodes a and b (0 for the same node) in a scenario's node
/// topology, for each pair: what the postal models' hop penalty counts.
#[pyfunction]
fn node_hops(py: Python<'_>, scenario: PyRef<'_, PyScenario>, pairs: Vec<(u32, u32)>) -> PyResult<Vec<u32>> {
    let net = scenario.config(py)?.network;
    let topology = net.platform.map(|p| p.topology).unwrap_or(crate::network::Topology::FullyConnected);
    let nodes = pairs.iter().map(|&(a, b)| a.max(b) as u64 + 1).max().unwrap_or(1);
    topology.validate(nodes).map_err(SimError::Rule)?;
    Ok(pairs.into_iter().map(|(a, b)| if a == b { 0 } else { topology.hops(a, b) }).collect())
}

/// LogGOPS costs of one message of `size` bytes, in ps, as the engine
/// charges them: (send CPU, send NIC, receive CPU, receive NIC).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn loggops_costs(l_ps: Time, o_ps: Time, g_ps: Time, big_g_ps: f64, big_o_ps: f64, s_bytes: u64, size: u64) -> (Time, Time, Time, Time) {
    let p = LogGOPS { l_ps, o_ps, g_ps, big_g_ps, big_o_ps, s_bytes };
    (p.send_cpu(size), p.send_nic(size), p.recv_cpu(size), p.recv_nic(size))
}

/// Algorithm 3 of the HMM paper: the next α from the waits of this
/// iteration (any unit, the same for the waits and ε).
#[pyfunction]
fn alpha_update(alpha: f64, wait_in: f64, wait_out: f64, theta: f64, epsilon: f64) -> f64 {
    crate::workloads::matvec_next_alpha(alpha, wait_in, wait_out, theta, epsilon)
}

/// Table 1 of the noise paper: (application, β).
#[pyfunction]
fn table1_beta() -> Vec<(&'static str, f64)> {
    crate::workloads::SKELETON_PRESETS.to_vec()
}

/// The scenario's JSON Schema (as JSON text).
#[pyfunction]
fn scenario_schema() -> String {
    crate::scenario::schema().to_string()
}

// Errors: every module's error type becomes its Python class here, and only
// here, so that Python code tells errors apart by class and attributes,
// never by their text (which is each error's Display).

// (not TraceError: idlewave.trace.format has one for its own reader)
create_exception!(
    _engine,
    TraceReplayError,
    SimulationError,
    "A trace that cannot be read, converted or extrapolated; .path names the rank file or trace directory to blame \
     (None if none), .record the record's index in it (None if none)."
);
create_exception!(
    _engine,
    InputFileError,
    SimulationError,
    "An input file (a rank file, a detour trace) that cannot be read; .path names it, .line the line to blame (None if none)."
);

/// `e` with attributes set on its exception value.
fn with_attrs(e: PyErr, attrs: impl for<'py> FnOnce(Python<'py>, &Bound<'py, PyAny>) -> PyResult<()>) -> PyErr {
    Python::with_gil(|py| {
        let value = e.value(py).clone().into_any();
        match attrs(py, &value) {
            Ok(()) => e,
            Err(failed) => failed,
        }
    })
}

impl From<SimError> for PyErr {
    fn from(e: SimError) -> Self {
        sim_err(e)
    }
}

impl From<crate::files::FileError> for PyErr {
    fn from(e: crate::files::FileError) -> Self {
        let path = e.path().to_string();
        with_attrs(InputFileError::new_err(e.to_string()), |py, v| {
            v.setattr("path", path)?;
            v.setattr("line", py.None())
        })
    }
}

impl From<crate::noise::trace::NoiseTraceError> for PyErr {
    fn from(e: crate::noise::trace::NoiseTraceError) -> Self {
        let (path, line) = (e.path().to_string(), e.line());
        with_attrs(InputFileError::new_err(e.to_string()), |_, v| {
            v.setattr("path", path)?;
            v.setattr("line", line)
        })
    }
}

impl From<crate::trace::TraceError> for PyErr {
    fn from(e: crate::trace::TraceError) -> Self {
        use crate::trace::TraceError as E;
        match e {
            // a loop stopped by Ctrl-C ends the call as Ctrl-C does
            E::Interrupted => pyo3::exceptions::PyKeyboardInterrupt::new_err(e.to_string()),
            E::File(f) => f.into(),
            e => {
                let (path, record) = (e.path().map(|p| p.display().to_string()), e.record());
                with_attrs(TraceReplayError::new_err(e.to_string()), |_, v| {
                    v.setattr("path", path)?;
                    v.setattr("record", record)
                })
            }
        }
    }
}

impl From<crate::program::stream::NoGoalForm> for PyErr {
    fn from(e: crate::program::stream::NoGoalForm) -> Self {
        SimulationError::new_err(e.to_string())
    }
}

impl From<crate::bench::BenchError> for PyErr {
    fn from(e: crate::bench::BenchError) -> Self {
        use crate::bench::BenchError as E;
        match e {
            E::Sim(e) => e.into(),
            E::Trace(e) => e.into(),
            E::NoGoalForm(e) => e.into(),
            e => SimulationError::new_err(e.to_string()),
        }
    }
}

/// Each kind of failure as its own exception class (all SimulationError,
/// with `.key`: the scenario key the run refuses, or None).
fn sim_err(e: SimError) -> PyErr {
    let msg = e.to_string();
    let key = match &e {
        SimError::Rule(r) => Some(r.key.clone()),
        _ => None,
    };
    let class = match e {
        SimError::Deadlock(_) => DeadlockError::new_err(msg),
        SimError::Unmatched(_) => UnmatchedError::new_err(msg),
        SimError::MemoryLimit(_) => MemoryLimitError::new_err(msg),
        SimError::TimeLimit(_) => TimeLimitError::new_err(msg),
        // a loop stopped by Ctrl-C (see crate::interrupt) ends the call as Ctrl-C does
        SimError::Interrupted => return pyo3::exceptions::PyKeyboardInterrupt::new_err(msg),
        SimError::Invalid(_) | SimError::Rule(_) => SimulationError::new_err(msg),
    };
    with_attrs(class, |_, v| v.setattr("key", key))
}

/// Calls a run's progress callback between chunks of events; keeps the
/// first error it raised (or a pending Ctrl-C) to raise when the run stops.
struct Progress<'py> {
    py: Python<'py>,
    callback: Option<PyObject>,
    /// The callback takes the share of the work done as a third argument.
    with_done: bool,
    error: Option<PyErr>,
}

impl Progress<'_> {
    /// Whether the run goes on.
    fn tick(&mut self, now: Time, events: u64, done: Option<f64>) -> bool {
        if let Err(e) = self.py.check_signals() {
            self.error = Some(e);
            return false;
        }
        let Some(f) = &self.callback else { return true };
        let called =
            if self.with_done { f.call1(self.py, (to_seconds(now), events, done)) } else { f.call1(self.py, (to_seconds(now), events)) };
        match called {
            Ok(v) => v.extract::<bool>(self.py).unwrap_or(true),
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }
}

/// Runs one checked scenario, capturing a timeline of up to `timeline_spans`
/// spans. `progress(sim_time_s, events) -> bool` (with `progress_done`:
/// `progress(sim_time_s, events, done)`, done the share of the work done or
/// None) is called between chunks of events; returning False stops the run.
/// `explain` keeps the critical path (as `[record] explain` does).
#[pyfunction]
#[pyo3(signature = (scenario, progress=None, timeline_spans=0, explain=false, progress_done=false))]
fn simulate(
    py: Python<'_>,
    scenario: PyRef<'_, PyScenario>,
    progress: Option<PyObject>,
    timeline_spans: u64,
    explain: bool,
    progress_done: bool,
) -> PyResult<PyRunResult> {
    // the Scenario is run as read (no second parse)
    let mut cfg = scenario.config(py)?;
    // the algorithm a collective loop runs (`auto` decided by the library's rules)
    let algorithm = cfg.workload.collective_algorithm().map(|a| crate::units::name(&a));
    cfg.timeline_spans = timeline_spans;
    cfg.explain |= explain;
    let mut watch = Progress { py, callback: progress, with_done: progress_done, error: None };
    let result = crate::interrupt::with_check(no_signal, || sim::run(&cfg, Some(&mut |now, events, done| watch.tick(now, events, done))));
    if let Some(e) = watch.error {
        return Err(e);
    }
    Ok(PyRunResult::new(result.map_err(sim_err)?, algorithm))
}

/// What a checked scenario is estimated to need before it runs, without
/// running it: ranks (0 for a GOAL file, known once
/// read), estimated_memory_bytes, max_memory_bytes and limit (what the
/// limit is; both None where no limit is known), and refused: the message
/// the run would be refused with, or None.
#[pyfunction]
#[pyo3(signature = (scenario, timeline_spans=0, explain=false))]
fn estimate_memory<'py>(
    py: Python<'py>,
    scenario: PyRef<'_, PyScenario>,
    timeline_spans: u64,
    explain: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let mut cfg = scenario.config(py)?;
    cfg.timeline_spans = timeline_spans;
    cfg.explain |= explain;
    let out = PyDict::new(py);
    let refused = match sim::estimate(&cfg) {
        Ok(e) => {
            out.set_item("ranks", e.ranks)?;
            out.set_item("estimated_memory_bytes", e.bytes)?;
            crate::memory::check_memory(e.bytes, cfg.max_memory_bytes).err().map(SimError::from)
        }
        // a skeleton's or app's calibration run that would not fit
        Err(e @ SimError::MemoryLimit(_)) => Some(e),
        Err(e) => return Err(sim_err(e)),
    };
    if !out.contains("ranks")? {
        out.set_item("ranks", py.None())?;
        out.set_item("estimated_memory_bytes", py.None())?;
    }
    let limit = crate::memory::memory_limit(cfg.max_memory_bytes);
    out.set_item("max_memory_bytes", limit.map(|l| l.0))?;
    out.set_item("limit", limit.map(|l| l.1))?;
    out.set_item("refused", refused.map(|e| e.to_string()))?;
    Ok(out)
}

/// LogGOPSim mode: returns (host finishing times in ps, events).
#[pyfunction]
#[pyo3(signature = (path, l_ns, o_ns, g_ns, big_g_ns, big_o_ns, s_bytes, noise_trace=None, noise_cosched=false, seed=0))]
#[allow(clippy::too_many_arguments)]
fn loggopsim(
    path: &str,
    l_ns: u64,
    o_ns: u64,
    g_ns: u64,
    big_g_ns: f64,
    big_o_ns: f64,
    s_bytes: u64,
    noise_trace: Option<String>,
    noise_cosched: bool,
    seed: u64,
) -> PyResult<(Vec<u64>, u64)> {
    let p = LogGOPS {
        l_ps: l_ns.saturating_mul(1000),
        o_ps: o_ns.saturating_mul(1000),
        g_ps: g_ns.saturating_mul(1000),
        big_g_ps: big_g_ns * 1000.0,
        big_o_ps: big_o_ns * 1000.0,
        s_bytes,
    };
    let noise: Vec<NoiseSpec> =
        noise_trace.map(|path| NoiseSpec::Trace { path, cosched: noise_cosched, ranks: None }).into_iter().collect();
    crate::interrupt::with_check(no_signal, || sim::run_goal(path, Network::uniform(p), &noise, seed)).map_err(sim_err)
}

/// Selfish detour recorder: (start_ns, duration_ns) of every gap above
/// `threshold_ns` while spinning for `duration_s` (the GIL is released).
#[pyfunction]
fn measure_selfish(py: Python<'_>, duration_s: f64, threshold_ns: u64) -> PyResult<Vec<(u64, u64)>> {
    if !(duration_s > 0.0 && duration_s.is_finite()) {
        return Err(err("duration must be positive".to_string()));
    }
    let d = std::time::Duration::from_secs_f64(duration_s);
    Ok(py.allow_threads(|| crate::noisemeter::selfish(d, std::time::Duration::from_nanos(threshold_ns))))
}

/// Fixed work quanta: nanoseconds of each of `samples` runs of `work` loop iterations.
#[pyfunction]
fn measure_fwq(py: Python<'_>, work: u64, samples: usize) -> Vec<u64> {
    py.allow_threads(|| crate::noisemeter::fwq(work, samples))
}

/// The partner file of a banded SpMV scenario (the generator for partner files).
#[pyfunction]
fn spmv_partners_text(py: Python<'_>, scenario: PyRef<'_, PyScenario>) -> PyResult<String> {
    let cfg = scenario.config(py)?;
    match &cfg.workload {
        WorkloadSpec::Spmv(w) if w.partners_file.is_none() => {
            w.validate().map_err(|e| err(e.to_string()))?;
            Ok(w.banded_table().write())
        }
        _ => Err(err("a partner file is generated from an spmv scenario with rows and bandwidth".to_string())),
    }
}

/// Writes a generated workload as its GOAL schedule.
/// (the memory limit the schedule is checked against: the scenario's, else the machine's)
struct ExportGoal(Option<u64>);

impl WorkloadVisitor for ExportGoal {
    type Out = Result<crate::program::goal::GoalSchedule, crate::program::stream::NoGoalForm>;
    fn visit<W: crate::program::stream::Workload + Clone + 'static>(self, w: W) -> Self::Out {
        export_goal(&w, self.0)
    }
}

/// The built-in workload of a scenario written as a GOAL schedule.
#[pyfunction]
fn export_goal_text(py: Python<'_>, scenario: PyRef<'_, PyScenario>) -> PyResult<String> {
    let cfg = scenario.config(py)?;
    if let Some(why) = cfg.workload.no_goal_export() {
        return Err(err(why.into()));
    }
    let (sched, _) =
        cfg.workload.visit(&cfg.network, ExportGoal(cfg.max_memory_bytes)).map_err(|e| err(e.to_string()))?.expect("a generated workload");
    Ok(write_goal(&sched?))
}

/// Writes a scenario's built-in workload as a GOAL schedule into `path`
/// (`to`: "text" or "binary"; the caller makes it atomic); returns (ranks, ops).
#[pyfunction]
fn export_goal_file(py: Python<'_>, scenario: PyRef<'_, PyScenario>, path: &str, to: &str) -> PyResult<(u32, u64)> {
    let binary_out = goal_format(to)?;
    let cfg = scenario.config(py)?;
    if let Some(why) = cfg.workload.no_goal_export() {
        return Err(err(why.into()));
    }
    py.allow_threads(|| {
        let (sched, _) = cfg
            .workload
            .visit(&cfg.network, ExportGoal(cfg.max_memory_bytes))
            .map_err(|e| err(e.to_string()))?
            .expect("a generated workload");
        let sched = sched.map_err(|e| err(e.to_string()))?;
        let bytes = if binary_out { crate::program::goal_bin::write_binary(&sched) } else { write_goal(&sched).into_bytes() };
        std::fs::write(path, &bytes).map_err(|e| err(format!("{path}: cannot write: {e}")))?;
        Ok((sched.num_ranks, sched.num_ops() as u64))
    })
}

/// Whether a GOAL format's name means binary.
fn goal_format(to: &str) -> PyResult<bool> {
    match to {
        "binary" => Ok(true),
        "text" => Ok(false),
        other => Err(err(format!("--to: \"{other}\" is not a GOAL format (binary, text)"))),
    }
}

/// Converts a GOAL schedule between text and LogGOPSim's binary layout
/// (`to`: "binary" or "text") into `dst` (the caller makes it atomic);
/// returns (the input's format, ranks, ops).
#[pyfunction]
fn goal_convert(py: Python<'_>, src: &str, dst: &str, to: &str) -> PyResult<(String, u32, u64)> {
    let binary_out = goal_format(to)?;
    py.allow_threads(|| {
        let path = std::path::Path::new(src);
        let was = if crate::program::goal_file::is_binary_file(path) { "binary" } else { "text" };
        let sched = crate::program::goal_file::read_goal_file(path).map_err(|e| err(e.to_string()))?;
        let bytes = if binary_out { crate::program::goal_bin::write_binary(&sched) } else { write_goal(&sched).into_bytes() };
        std::fs::write(dst, &bytes).map_err(|e| err(format!("{dst}: cannot write: {e}")))?;
        Ok((was.to_string(), sched.num_ranks, sched.num_ops() as u64))
    })
}

/// Streams a trace replay's schedule (JSON of the trace workload) into a
/// GOAL file; returns (ranks, ops).
#[pyfunction]
fn trace_export_goal(py: Python<'_>, spec_json: &str, path: &str) -> PyResult<(u32, u64)> {
    let spec: crate::trace::TraceSpec = serde_json::from_str(spec_json).map_err(|e| err(format!("trace workload: {e}")))?;
    py.allow_threads(|| {
        crate::interrupt::with_check(no_signal, || {
            let io = crate::trace::TraceError::io(std::path::Path::new(path));
            let f = std::fs::File::create(path).map_err(io)?;
            let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
            let n = crate::trace::export_goal(&spec, &mut w)?;
            std::io::Write::flush(&mut w).map_err(crate::trace::TraceError::io(std::path::Path::new(path)))?;
            Ok::<_, crate::trace::TraceError>(n)
        })
    })
    .map_err(PyErr::from)
}

/// The trace format's op codes and names (docs/trace-format.md).
#[pyfunction]
fn trace_ops() -> Vec<(u16, String)> {
    crate::trace::format::all_ops()
}

/// The process grid of a trace directory, as an extrapolation finds it: (dims, periodic).
#[pyfunction]
fn trace_grid(dir: &str) -> PyResult<(Vec<u32>, Vec<bool>)> {
    Ok(crate::trace::grid_of(std::path::Path::new(dir))?)
}

/// The grid an extrapolation of a traced grid to `ranks` ranks makes
/// (trace/multi.py evaluates rules in the grid's extents there).
#[pyfunction]
fn grid_target(dims: Vec<u32>, periodic: Vec<bool>, ranks: u32) -> PyResult<Vec<u32>> {
    use crate::trace::grid::{target_dims, Grid};
    let g = Grid::new(dims, periodic).map_err(|e| err(e.to_string()))?;
    Ok(target_dims(&g, ranks).map_err(|e| err(e.to_string()))?.0)
}

/// Writes the synthetic ring trace the benchmark uses (tests, examples).
#[pyfunction]
fn write_synthetic_trace(dir: &str, ranks: u32, iterations: u64) -> PyResult<()> {
    crate::trace::write_synthetic(std::path::Path::new(dir), ranks, iterations).map_err(|e| err(format!("{dir}: {e}")))
}

/// Runs one benchmark case; returns a dict with case, ranks, events, wall_s,
/// events_per_s, bytes_per_rank.
#[pyfunction]
fn bench_case<'py>(py: Python<'py>, case: &str) -> PyResult<Bound<'py, PyDict>> {
    let r = py.allow_threads(|| bench::run_case(case))?;
    let out = PyDict::new(py);
    out.set_item("case", r.case)?;
    out.set_item("ranks", r.ranks)?;
    out.set_item("events", r.events)?;
    out.set_item("wall_s", r.wall_s)?;
    out.set_item("events_per_s", r.events_per_s)?;
    out.set_item("bytes_per_rank", r.bytes_per_rank)?;
    for (k, v) in &r.extra {
        out.set_item(k, v)?;
    }
    Ok(out)
}

/// The cases `idlewave bench` runs, and (with `smaller`) the smaller ones
/// it runs only by name.
#[pyfunction]
#[pyo3(signature = (smaller = false))]
fn bench_cases(smaller: bool) -> Vec<&'static str> {
    if smaller {
        bench::SMALLER_CASES.to_vec()
    } else {
        bench::CASES.to_vec()
    }
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let simulation_error = m.py().get_type::<SimulationError>();
    // every SimulationError has `.key`: None unless the run refuses a scenario key (sim_err)
    simulation_error.setattr("key", m.py().None())?;
    m.add("SimulationError", simulation_error)?;
    m.add("DeadlockError", m.py().get_type::<DeadlockError>())?;
    m.add("UnmatchedError", m.py().get_type::<UnmatchedError>())?;
    m.add("MemoryLimitError", m.py().get_type::<MemoryLimitError>())?;
    m.add("TimeLimitError", m.py().get_type::<TimeLimitError>())?;
    m.add("TraceReplayError", m.py().get_type::<TraceReplayError>())?;
    m.add("InputFileError", m.py().get_type::<InputFileError>())?;
    m.add("MAX_INPUT_PS", crate::time::MAX_INPUT)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_memory, m)?)?;
    m.add_function(wrap_pyfunction!(loggopsim, m)?)?;
    m.add_function(wrap_pyfunction!(export_goal_text, m)?)?;
    m.add_function(wrap_pyfunction!(export_goal_file, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_schema, m)?)?;
    m.add_class::<PyScenario>()?;
    m.add_class::<PyRunResult>()?;
    m.add_function(wrap_pyfunction!(platform_presets, m)?)?;
    m.add_function(wrap_pyfunction!(read_toml, m)?)?;
    m.add_function(wrap_pyfunction!(apply_overrides, m)?)?;
    m.add_function(wrap_pyfunction!(node_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(table1_beta, m)?)?;
    m.add_function(wrap_pyfunction!(loggops_costs, m)?)?;
    m.add_function(wrap_pyfunction!(alpha_update, m)?)?;
    m.add_function(wrap_pyfunction!(rank_nodes, m)?)?;
    m.add_function(wrap_pyfunction!(node_hops, m)?)?;
    m.add_function(wrap_pyfunction!(cartesian_nodes, m)?)?;
    m.add_function(wrap_pyfunction!(spmv_partners_text, m)?)?;
    m.add_function(wrap_pyfunction!(measure_selfish, m)?)?;
    m.add_function(wrap_pyfunction!(measure_fwq, m)?)?;
    m.add_function(wrap_pyfunction!(bench_case, m)?)?;
    m.add_function(wrap_pyfunction!(bench_cases, m)?)?;
    m.add_function(wrap_pyfunction!(trace_export_goal, m)?)?;
    m.add_function(wrap_pyfunction!(goal_convert, m)?)?;
    m.add_function(wrap_pyfunction!(trace_ops, m)?)?;
    m.add_function(wrap_pyfunction!(write_synthetic_trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace_grid, m)?)?;
    m.add_function(wrap_pyfunction!(grid_target, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

//! `idlewave._engine.Result`: one run's result as the engine made it. The
//! run's data stays in Rust; each getter converts what it is asked for
//! (numpy arrays for per-rank data, dicts for tables), once per call.

use crate::probes::explain::{Explained, Waits, CAUSES, CLASSES, PARAMS};
use crate::sim::RunResult;
use crate::time::to_seconds;
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// What one run produced (`idlewave.simulate` wraps it in `idlewave.Result`).
#[pyclass(module = "idlewave._engine", name = "Result", frozen)]
pub struct PyRunResult {
    run: RunResult,
    /// The algorithm a collective loop ran (`auto` decided by the library's rules).
    algorithm: Option<String>,
}

impl PyRunResult {
    pub fn new(run: RunResult, algorithm: Option<String>) -> Self {
        PyRunResult { run, algorithm }
    }
}

#[pymethods]
impl PyRunResult {
    /// When each rank finished, in seconds.
    #[getter]
    fn finish_times_s<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_iter(py, self.run.finish_times.iter().map(|&t| to_seconds(t)))
    }

    /// When each rank finished, in picoseconds (exact).
    #[getter]
    fn finish_times_ps<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        PyArray1::from_slice(py, &self.run.finish_times)
    }

    /// Timer name -> ranks × iterations matrix of durations in seconds (NaN where a rank never ran the region).
    #[getter]
    fn timers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let timers = PyDict::new(py);
        let shape = [self.run.ranks as usize, self.run.iterations as usize];
        for (name, data) in self.run.timer_names.iter().zip(&self.run.timers) {
            let matrix: Bound<'py, PyArray2<f64>> = PyArray1::from_slice(py, data).reshape(shape)?;
            timers.set_item(name, matrix)?;
        }
        Ok(timers)
    }

    #[getter]
    fn ranks(&self) -> u32 {
        self.run.ranks
    }

    #[getter]
    fn iterations(&self) -> u32 {
        self.run.iterations
    }

    #[getter]
    fn makespan_s(&self) -> f64 {
        to_seconds(self.run.makespan)
    }

    #[getter]
    fn makespan_ps(&self) -> u64 {
        self.run.makespan
    }

    #[getter]
    fn events(&self) -> u64 {
        self.run.events
    }

    /// The algorithm a collective loop ran (the one `auto` chose); None for other workloads.
    #[getter]
    fn algorithm(&self) -> Option<&str> {
        self.algorithm.as_deref()
    }

    #[getter]
    fn wall_s(&self) -> f64 {
        self.run.wall_s
    }

    /// Peak heap bytes the engine allocated during the run.
    #[getter]
    fn peak_memory_bytes(&self) -> usize {
        self.run.peak_bytes
    }

    /// What the run was estimated to need, and checked against, before it allocated.
    #[getter]
    fn estimated_memory_bytes(&self) -> Option<u128> {
        self.run.estimated_bytes
    }

    /// Quantities the workload derived (e.g. a skeleton's computation time), in seconds.
    #[getter]
    fn derived<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let derived = PyDict::new(py);
        for (k, v) in &self.run.derived {
            derived.set_item(k, v)?;
        }
        Ok(derived)
    }

    /// A trace replay's report (what it did not model, the traced time in MPI); None for other workloads.
    #[getter]
    fn trace_report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(report) = &self.run.trace_report else { return Ok(None) };
        // its fields are serde's (nested lists and tables): JSON is the shortest way to a dict
        let json = serde_json::to_string(report).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        Ok(Some(py.import("json")?.call_method1("loads", (json,))?))
    }

    /// The critical path, if the run kept it (see `explained`).
    /// With shared links: the links that held messages back the most
    /// (`all`), and per job of a `[[jobs]]` run its own, the time all its
    /// links cost it and the summary's key for them (`jobs`); None without
    /// shared links.
    #[getter]
    fn held_back<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        if self.run.held_back.is_empty() && self.run.job_held_back.is_empty() {
            return Ok(None);
        }
        let links = |v: &[crate::engine::HeldBack]| -> PyResult<Bound<'py, PyList>> {
            let l = PyList::empty(py);
            for h in v {
                let d = PyDict::new(py);
                d.set_item("link", &h.link)?;
                d.set_item("class", &h.class)?;
                d.set_item("delay_s", h.ps / 1e12)?;
                l.append(d)?;
            }
            Ok(l)
        };
        let d = PyDict::new(py);
        d.set_item("all", links(&self.run.held_back)?)?;
        let jobs = PyList::empty(py);
        for ((v, total), key) in self.run.job_held_back.iter().zip(&self.run.job_held_back_keys) {
            let j = PyDict::new(py);
            j.set_item("key", key)?;
            j.set_item("delay_s", total / 1e12)?;
            j.set_item("links", links(v)?)?;
            jobs.append(j)?;
        }
        d.set_item("jobs", jobs)?;
        Ok(Some(d))
    }

    #[getter]
    fn explain<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.run.explained.as_ref().map(|x| explained(py, x)).transpose()
    }

    /// The captured spans as columns (rank, peer, start_ps, end_ps, activity,
    /// tag, bytes) and `truncated`, if a timeline was asked for.
    #[getter]
    fn timeline<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some((spans, truncated)) = &self.run.timeline else { return Ok(None) };
        let tl = PyDict::new(py);
        tl.set_item("rank", PyArray1::from_iter(py, spans.iter().map(|s| s.rank)))?;
        tl.set_item("peer", PyArray1::from_iter(py, spans.iter().map(|s| s.peer)))?;
        tl.set_item("start_ps", PyArray1::from_iter(py, spans.iter().map(|s| s.start)))?;
        tl.set_item("end_ps", PyArray1::from_iter(py, spans.iter().map(|s| s.end)))?;
        tl.set_item("activity", PyArray1::from_iter(py, spans.iter().map(|s| s.activity as u8)))?;
        tl.set_item("tag", PyArray1::from_iter(py, spans.iter().map(|s| s.tag)))?;
        tl.set_item("bytes", PyArray1::from_iter(py, spans.iter().map(|s| s.bytes)))?;
        tl.set_item("truncated", *truncated)?;
        if let Some(c) = &self.run.link_counters {
            // shared links: each class's flows and busy links, from each sample's time on
            let links = PyDict::new(py);
            links.set_item("classes", c.classes.clone())?;
            links.set_item("t_ps", PyArray1::from_iter(py, c.samples.iter().map(|s| s.t)))?;
            links.set_item("class", PyArray1::from_iter(py, c.samples.iter().map(|s| s.class)))?;
            links.set_item("flows", PyArray1::from_iter(py, c.samples.iter().map(|s| s.flows)))?;
            links.set_item("busy", PyArray1::from_iter(py, c.samples.iter().map(|s| s.busy)))?;
            links.set_item("truncated", c.truncated)?;
            tl.set_item("links", links)?;
        }
        Ok(Some(tl))
    }

    fn __repr__(&self) -> String {
        format!(
            "<Result {} ranks, {} iterations, makespan {} s, {} events>",
            self.run.ranks,
            self.run.iterations,
            to_seconds(self.run.makespan),
            self.run.events
        )
    }
}

/// The critical path for Python: the makespan by cause (ps), the counts of
/// each parameter by link class (the derivatives), the waits per rank, the route.
fn explained<'py>(py: Python<'py>, x: &Explained) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("makespan_ps", x.makespan)?;
    d.set_item("last_rank", x.last_rank)?;
    d.set_item("peak_bytes", x.peak_bytes)?;
    let causes = PyDict::new(py);
    for (name, ps) in CAUSES.iter().zip(x.path.ps) {
        causes.set_item(name, ps)?;
    }
    d.set_item("causes_ps", causes)?;
    let counts = PyDict::new(py);
    for (c, class) in CLASSES.iter().enumerate() {
        let per = PyDict::new(py);
        for (k, param) in PARAMS.iter().enumerate() {
            if let Some(n) = x.path.by_class(c, k) {
                per.set_item(param, n)?;
            }
        }
        counts.set_item(class, per)?;
    }
    d.set_item("counts", counts)?;
    let totals = PyDict::new(py);
    for (k, param) in PARAMS.iter().enumerate() {
        totals.set_item(param, x.path.count(k))?;
    }
    d.set_item("derivatives", totals)?;
    d.set_item("waits", waits(py, &x.waits)?)?;
    d.set_item("route", route(py, x)?)?;
    Ok(d)
}

/// Per rank, what it waited for (ps) and where its longest wait was.
fn waits<'py>(py: Python<'py>, waits: &[Waits]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let col = |f: fn(&Waits) -> u64| PyArray1::from_iter(py, waits.iter().map(f));
    d.set_item("late_sender_ps", col(|w| w.late_sender))?;
    d.set_item("late_receiver_ps", col(|w| w.late_receiver))?;
    d.set_item("collective_ps", col(|w| w.collective))?;
    d.set_item("other_ps", col(|w| w.other))?;
    d.set_item("longest_ps", col(|w| w.longest))?;
    d.set_item("longest_on", PyArray1::from_iter(py, waits.iter().map(|w| w.longest_on)))?;
    Ok(d)
}

/// The critical path's route through the ranks as columns, one per cause.
fn route<'py>(py: Python<'py>, x: &Explained) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rank", PyArray1::from_iter(py, x.route.iter().map(|s| s.rank)))?;
    // u32::MAX where the program does not count iterations
    d.set_item("iteration", PyArray1::from_iter(py, x.route.iter().map(|s| s.iteration.unwrap_or(u32::MAX))))?;
    d.set_item("start_ps", PyArray1::from_iter(py, x.route.iter().map(|s| s.start)))?;
    d.set_item("end_ps", PyArray1::from_iter(py, x.route.iter().map(|s| s.end)))?;
    for (c, name) in CAUSES.iter().enumerate() {
        d.set_item(format!("{name}_ps"), PyArray1::from_iter(py, x.route.iter().map(|s| s.ps[c])))?;
    }
    // the shared link each stretch's arrival waited on (None if none), and how long
    let names: std::collections::HashMap<u32, &str> = x.link_names.iter().map(|(s, n)| (*s, n.as_str())).collect();
    let link = PyList::empty(py);
    for s in &x.route {
        link.append(s.link.and_then(|(slot, _)| names.get(&slot).copied()))?;
    }
    d.set_item("link", link)?;
    d.set_item("link_wait_ps", PyArray1::from_iter(py, x.route.iter().map(|s| s.link.map_or(0, |l| l.1))))?;
    Ok(d)
}

//! The discrete-event core: LogGOPS charging identical to LogGOPSim
//! (docs/engine-semantics.md), MPI matching, noise, and deadlock
//! and unmatched-message detection.
//!
//! Progress model: once posted, a nonblocking request progresses without the
//! program calling MPI. An arriving message is received (o charged) as soon
//! as the receiver's CPU is free, and a rendezvous send completes when the
//! receiver matches it, whether or not either side is inside an MPI call.

mod fabric;
#[cfg(test)]
mod flow_tests;
mod flows;
mod layout;
mod matching;
pub mod probe;
mod queue;
#[cfg(test)]
mod tests;
mod waiting;
mod window_sort;

pub(crate) use fabric::MEM_BUSY;
pub use fabric::{Fabric, FlowRoutes};
pub use flows::{CounterSample, HeldBack, LinkClassStats, LinkCounters};
pub use layout::Layout;
pub(crate) use layout::LISTS;
pub use matching::{Entry, Lists, Matcher, Queue, EMPTY_LISTS};
pub use queue::{EvKind, Event, EventQueue};
pub(crate) use waiting::Mix;

use crate::network::{LogGOPS, Network, NicModel, Rendezvous};
use crate::noise::Noise;
use crate::prefetch::prefetch;
use crate::program::{OpKind, Program, ReadyOp, ANY};
use crate::time::Time;
use crate::units::MAX_MESSAGE_BYTES;
use probe::{by_peer, Message, NoProbe, Probe, Receipt, Send, View, Wait, COLLECTIVE, LATE_RECEIVER, LATE_SENDER, OTHER};

/// Why a run could not complete.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// Ranks wait forever; the text lists up to 10 of them and what they wait on.
    Deadlock(String),
    /// Every rank finished but messages or receives were left unmatched.
    Unmatched(String),
    /// Invalid program or parameters found while running.
    Invalid(String),
    /// The run would need more memory than allowed (refused before allocating).
    MemoryLimit(String),
    /// Simulated time passed the engine's limit (2^62 ps).
    TimeLimit(String),
    /// Stopped from outside (e.g. Ctrl-C).
    Interrupted,
    /// A scenario key the run refuses: checks only the run can make (a torus
    /// too small for the ranks, a mapping file that cannot be read).
    Rule(crate::rule::RuleError),
}

impl From<crate::rule::RuleError> for SimError {
    fn from(e: crate::rule::RuleError) -> Self {
        SimError::Rule(e)
    }
}

impl From<crate::noise::NoiseError> for SimError {
    fn from(e: crate::noise::NoiseError) -> Self {
        match e {
            crate::noise::NoiseError::Rule(e) => SimError::Rule(e),
            e @ crate::noise::NoiseError::Trace(_) => SimError::Invalid(e.to_string()),
        }
    }
}

/// Errors found outside the event loop (configuration, files) are invalid input.
impl From<String> for SimError {
    fn from(s: String) -> Self {
        SimError::Invalid(s)
    }
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Deadlock(s) => write!(f, "deadlock: {s}"),
            SimError::Unmatched(s) => write!(f, "unmatched communication at the end of the run: {s}"),
            SimError::Invalid(s) | SimError::MemoryLimit(s) | SimError::TimeLimit(s) => write!(f, "{s}"),
            SimError::Interrupted => write!(f, "interrupted"),
            SimError::Rule(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SimError {}

/// A run's GOAL file: stopped from outside ends the run as Ctrl-C does; the rest is invalid input.
impl From<crate::program::goal::GoalError> for SimError {
    fn from(e: crate::program::goal::GoalError) -> Self {
        if e.interrupted {
            SimError::Interrupted
        } else {
            SimError::Invalid(e.to_string())
        }
    }
}

impl From<crate::memory::OverLimit> for SimError {
    fn from(e: crate::memory::OverLimit) -> Self {
        SimError::MemoryLimit(e.to_string())
    }
}

/// How many events ahead the engine prefetches the state of the rank an
/// event belongs to: far enough for the access to land before the event
/// runs, near enough that the line is still in cache.
const PREFETCH_AHEAD: usize = 8;

/// How many stuck ranks or leftover messages an error names.
const REPORT_LIMIT: usize = 10;

/// `O`: what observes the run (probes/); without one ([`NoProbe`]) every
/// call to it compiles away.
pub struct Engine<P: Program, O: Probe = NoProbe> {
    /// The program, clocks, time, network and noise: what probes may read,
    /// kept in one struct so that telling a probe passes one pointer.
    pub view: View<P>,
    matcher: Matcher,
    queue: EventQueue,
    /// Completed operations (sends, receives, computations).
    pub events: u64,
    touched: Vec<u32>,
    ready: Vec<ReadyOp>,
    started: bool,
    fabric: fabric::Fabric,
    waiting: waiting::Waiting,
    probe: O,
    /// Whether a message for a busy receiver is queued for its free moment
    /// (`handled_from`): with the shortcuts on (`set_shortcuts`), a
    /// LogGOPSim NIC and no memory-bound work.
    direct: bool,
}

impl<P: Program> Engine<P> {
    pub fn new(program: P, net: Network, noise: Noise) -> Result<Self, SimError> {
        Self::with_probe(program, net, noise, NoProbe)
    }
}

impl<P: Program, O: Probe> Engine<P, O> {
    /// An engine observed by `probe` (attached before the run starts).
    pub fn with_probe(program: P, net: Network, noise: Noise, probe: O) -> Result<Self, SimError> {
        let mut e = Self::build(program, net, noise, probe)?;
        e.tell(|o, v| o.attach(v));
        Ok(e)
    }

    /// Tells the probe something, through `f`, with a view of the engine.
    #[inline(always)]
    pub(crate) fn tell<R>(&mut self, f: impl FnOnce(&mut O, &View<P>) -> R) -> R {
        f(&mut self.probe, &self.view)
    }

    /// [`tell`](Self::tell) for a call that may end a CPU's `wait`: the
    /// idle time the probe found goes to the program's wait timer.
    #[inline(always)]
    fn tell_wait(&mut self, wait: Wait, f: impl FnOnce(&mut O, &View<P>, Wait) -> Time) {
        let idle = self.tell(|o, v| f(o, v, wait));
        if idle > 0 {
            self.view.program.waited(wait.rank, idle);
        }
    }

    /// The probe, to read what it keeps during the run.
    pub fn probe(&self) -> &O {
        &self.probe
    }

    fn build(program: P, mut net: Network, noise: Noise, probe: O) -> Result<Self, SimError> {
        net.validate()?;
        net.prepare(program.num_ranks())?;
        let fabric = fabric::Fabric::new(&net, program.num_ranks());
        fabric.check(&net)?;
        let p = program.num_ranks() as usize;
        let ncpu = program.num_cpus().max(1) as usize;
        if net.nic_ports > 1 && program.num_nics() > 1 {
            return Err(SimError::Rule(crate::rule::RuleError::new(
                "network.nic_ports",
                format!(
                    "this schedule names its own NICs ({} of them); nic_ports lets the engine choose them, for programs that do not",
                    program.num_nics()
                ),
            )));
        }
        let nnic = program.num_nics().max(net.nic_ports).max(1) as usize;
        let layout = Layout::new(ncpu, nnic);
        let stride = layout.stride;
        let mut clocks = Vec::with_capacity(p * stride);
        crate::memory::prefer_huge_pages(&clocks);
        for r in 0..p {
            // (at tens of millions of ranks this takes seconds, mostly the kernel zeroing pages)
            if r.is_multiple_of(1 << 16) && !crate::interrupt::keep_going() {
                return Err(SimError::Interrupted);
            }
            clocks.extend(std::iter::repeat_n(0, ncpu + 2 * nnic).chain([EMPTY_LISTS; LISTS]));
        }
        let waiting = waiting::Waiting::new(program.many_ready_ops());
        let mut e = Engine {
            view: View { clocks, now: 0, net, noise, program, layout },
            matcher: Matcher::new(),
            queue: EventQueue::new(),
            events: 0,
            touched: Vec::new(),
            ready: Vec::new(),
            started: false,
            fabric,
            waiting,
            probe,
            direct: false,
        };
        e.direct = e.may_deliver_directly();
        if let Some(f) = e.fabric.flows.as_deref_mut() {
            f.set_jobs(&e.view.program.job_firsts());
        }
        Ok(e)
    }

    pub fn num_ranks(&self) -> u32 {
        self.view.program.num_ranks()
    }

    /// Simulated time of the last processed event.
    pub fn now(&self) -> Time {
        self.view.now
    }

    /// When rank `r` finished: the latest time any of its CPUs was busy
    /// (LogGOPSim's per-host time).
    pub fn finish_time(&self, r: u32) -> Time {
        self.view.finish_time(r)
    }

    /// Per node, bytes sent to and received from other nodes (empty
    /// without a platform).
    pub fn node_traffic(&self) -> (&[u64], &[u64]) {
        (&self.fabric.node_bytes_out, &self.fabric.node_bytes_in)
    }

    /// Bytes per slot of the links between switches, and what the slots are
    /// (none without a topology).
    pub fn link_traffic(&self) -> (&[u64], &crate::network::Links) {
        (&self.fabric.link_bytes, &self.fabric.links)
    }

    /// With shared links: per class of link what its links carried, the
    /// delay sharing added summed over messages (ps), and the messages that flowed.
    pub fn shared_links(&self) -> Option<(Vec<LinkClassStats>, f64, u64)> {
        let f = self.fabric.flows.as_deref()?;
        let end = (0..self.num_ranks()).map(|r| self.finish_time(r)).max().unwrap_or(0);
        Some((f.stats(end), f.delay_ps, f.flowed))
    }

    /// With shared links: the links that held messages back the most (at
    /// most `top`), by name, with their class and the time they cost (ps,
    /// summed over messages); for `job` (see `Program::job_firsts`) if given,
    /// with what all that job's links cost it.
    pub fn links_held_back(&self, job: Option<u32>, top: usize) -> Option<(Vec<HeldBack>, f64)> {
        let f = self.fabric.flows.as_deref()?;
        let (worst, total) = match job {
            Some(j) => f.job_worst_links(j, top),
            None => {
                let w = f.worst_links(top);
                (w, f.delay_ps)
            }
        };
        let named =
            worst.into_iter().map(|(s, ps)| HeldBack { link: f.routes.name(s as usize), class: f.routes.link(s as usize).0.name(), ps });
        Some((named.collect(), total))
    }

    /// With shared links, samples each class's flows and busy links for a
    /// timeline (up to `limit` samples).
    pub fn record_link_counters(&mut self, limit: usize) {
        if let Some(f) = self.fabric.flows.as_deref_mut() {
            f.record_counters(limit);
        }
    }

    /// The counters sampled (see `record_link_counters`).
    pub fn take_link_counters(&mut self) -> Option<flows::LinkCounters> {
        self.fabric.flows.as_deref_mut()?.counters.take().map(|c| *c)
    }

    /// A shared link's name (None without shared links).
    pub fn link_name(&self, slot: u32) -> Option<String> {
        Some(self.fabric.flows.as_deref()?.routes.name(slot as usize))
    }

    /// Bytes held by the engine's own buffers (not the program's).
    pub fn capacity_bytes(&self) -> usize {
        self.view.clocks.capacity() * 8
            + self.matcher.capacity_bytes()
            + self.queue.capacity_bytes()
            + self.fabric.bytes()
            + self.waiting.capacity_bytes()
    }

    /// The engine's two queue shortcuts, waiting lines (waiting.rs) and
    /// messages queued for a busy receiver's free moment (`handled_from`),
    /// on (the default) or off: every waiter is then looked at when it
    /// arrives and re-queued, as LogGOPSim does (the reference the property
    /// tests compare with).
    pub fn set_shortcuts(&mut self, on: bool) {
        self.waiting.off = !on;
        self.direct = on && self.may_deliver_directly();
    }

    /// Runs to completion.
    pub fn run(&mut self) -> Result<(), SimError> {
        while !self.step(u64::MAX)? {}
        Ok(())
    }

    /// Processes up to `budget` queue events; returns true when the run is over.
    pub fn step(&mut self, budget: u64) -> Result<bool, SimError> {
        if !self.started {
            self.started = true;
            self.start()?;
        }
        let work = self.flow_work();
        for i in 0..budget {
            // the caller checks for Ctrl-C between steps: a step also ends after as much re-solving as
            // `budget` events would be, for runs whose events re-solve thousands of flows each
            if i % 1024 == 1023 && self.flow_work() - work > budget {
                return Ok(false);
            }
            let Some(ev) = self.queue.pop() else {
                self.check_end()?;
                return Ok(true);
            };
            if ev.time > crate::time::TIME_LIMIT {
                return Err(self.past_limit(ev.time));
            }
            self.view.now = ev.time;
            self.tell(|o, v| o.begin(v, &ev));
            if self.queue.started_window() {
                // a new window: its first events were out of the look-ahead's sight
                for k in 0..PREFETCH_AHEAD {
                    self.prefetch_event(k);
                }
            }
            self.prefetch_event(PREFETCH_AHEAD);
            if let Some(soon) = self.queue.upcoming(PREFETCH_AHEAD / 3) {
                // its clocks line arrived by now: fetch the tails of its match lists
                self.matcher.prefetch(self.view.clocks[self.lists(soon.rank)]);
                if soon.kind() == EvKind::FlowDone {
                    self.fabric.prefetch_flow(soon.id, true);
                }
                self.probe.prefetch(&self.view, soon, true);
            }
            self.process(ev);
            if let Some(next) = self.waiting.next_after(&ev, self.view.now) {
                // it waited for what the head waited for (explain: the head's path)
                self.probe.requeued_now(next.stamp());
                self.queue.push_again(next);
            }
            if !self.touched.is_empty() {
                self.issue_freed()?;
            }
        }
        Ok(false)
    }

    /// The shared links' re-solving so far (`Flows::work`; 0 without them).
    fn flow_work(&self) -> u64 {
        self.fabric.flows.as_deref().map_or(0, |f| f.work)
    }

    /// Asks for the state the event `k` places ahead will read.
    #[inline(always)]
    fn prefetch_event(&self, k: usize) {
        if let Some(soon) = self.queue.upcoming(k) {
            let r = soon.rank;
            // a rank's clocks may straddle two lines: fetch its first and last word's
            prefetch(&self.view.clocks, r as usize * self.view.layout.stride);
            prefetch(&self.view.clocks, self.lists(r));
            self.view.program.prefetch(r);
            self.view.noise.prefetch(r);
            if soon.kind() == EvKind::Send {
                // the receiver's clocks: `handled_from` reads them
                prefetch(&self.view.clocks, soon.peer as usize * self.view.layout.stride);
            } else if soon.kind() == EvKind::FlowDone {
                self.fabric.prefetch_flow(soon.id, false);
            }
            self.probe.prefetch(&self.view, soon, false);
        }
    }

    /// Runs every rank's initial ops at time 0. They precede all other events
    /// (LogGOPSim queues them first), so they take the lowest stamps — rank
    /// by rank, in the order `collect` gives — and run straight away instead
    /// of first filling the queue with one event per rank.
    fn start(&mut self) -> Result<(), SimError> {
        let per_rank = self.view.program.max_initial_ops().max(1) as u64;
        let p = self.num_ranks();
        self.queue.reserve_stamps(p as u64 * per_rank);
        let mut initial = Vec::new();
        for r in 0..p {
            self.probe.rank_started(r);
            self.view.program.collect(r, 0, 0, &mut initial).map_err(SimError::Invalid)?;
            initial.sort_by_key(|op| op.kind);
            for (i, op) in initial.drain(..).enumerate() {
                // LogGOPSim issues every initial op at time 0 (a busy CPU then
                // defers it). With time 0 and a reserved stamp it is the
                // earliest pending event, so running it now is queue order.
                let mut ev = self.event_for(r, op)?;
                ev.time = 0;
                ev.set_stamp(r as u64 * per_rank + i as u64);
                self.process(ev);
                if !self.touched.is_empty() {
                    self.issue_freed()?;
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn process(&mut self, ev: Event) {
        match ev.kind() {
            EvKind::Calc => self.on_calc(ev),
            EvKind::Send => self.on_send(ev),
            EvKind::Recv => self.on_recv(ev),
            EvKind::Msg | EvKind::Data => self.on_msg(ev),
            EvKind::Probe => self.on_probe(ev),
            EvKind::Mem => self.on_mem(ev),
            EvKind::MemDone => self.on_mem_done(ev),
            EvKind::Rts => self.on_rts(ev),
            EvKind::Cts => self.on_cts(ev),
            EvKind::Landed | EvKind::DataLanded => self.on_landed(ev),
            EvKind::FlowDone => self.on_flow_done(ev),
            EvKind::FlowSolve => self.on_flow_solve(ev),
            EvKind::FlowStart => self.on_flow_start(ev),
        }
    }

    #[inline]
    fn o(&self, rank: u32, cpu: u8) -> usize {
        self.view.layout.o(rank, cpu)
    }

    #[inline]
    fn gs(&self, rank: u32, nic: u8) -> usize {
        self.view.layout.gs(rank, nic)
    }

    #[inline]
    fn gr(&self, rank: u32, nic: u8) -> usize {
        self.view.layout.gr(rank, nic)
    }

    #[inline]
    fn lists(&self, rank: u32) -> usize {
        self.view.layout.lists(rank)
    }

    fn entries(&self, rank: u32, q: Queue) -> Vec<Entry> {
        self.matcher.entries(self.view.clocks[self.lists(rank)], q)
    }

    fn on_calc(&mut self, ev: Event) {
        let c = self.o(ev.rank, ev.cpu());
        if self.view.clocks[c] > ev.time {
            self.defer(ev, self.view.clocks[c], [c, c]);
            return;
        }
        let before = self.view.clocks[c];
        self.view.clocks[c] = self.view.noise.cpu_end(ev.rank, ev.time, ev.size);
        self.tell_wait(Wait { rank: ev.rank, before, at: ev.time, why: OTHER, on: ev.rank }, |o, v, w| o.computed(v, w, c, ev.size));
        self.view.program.started(ev.rank, ev.id);
        self.view.program.done(ev.rank, ev.id);
        self.touched.push(ev.rank);
        self.events += 1;
    }

    /// A test first lets every event already due at its time run (messages
    /// whose handling waited for the CPU), then completes like a 0-length calc.
    fn on_probe(&mut self, mut ev: Event) {
        if ev.tag == 0 {
            ev.tag = 1;
            let stamp = self.queue.push_new(ev);
            self.probe.requeued_now(stamp);
            return;
        }
        let c = self.o(ev.rank, ev.cpu());
        if self.view.clocks[c] > ev.time {
            self.defer(ev, self.view.clocks[c], [c, c]);
            return;
        }
        let before = self.view.clocks[c];
        self.view.clocks[c] = self.view.noise.cpu_end(ev.rank, ev.time, 0);
        self.tell_wait(Wait { rank: ev.rank, before, at: ev.time, why: OTHER, on: ev.rank }, |o, v, w| o.tested(v, w, c));
        self.view.program.started(ev.rank, ev.id);
        self.view.program.done(ev.rank, ev.id);
        self.touched.push(ev.rank);
    }

    fn on_send(&mut self, mut ev: Event) {
        if self.view.net.nic_ports > 1 {
            // another send may have taken the port chosen when this one was issued
            ev = ev.with_nic(self.port(ev.rank));
        }
        let (c, n) = (self.o(ev.rank, ev.cpu()), self.gs(ev.rank, ev.nic()));
        let free = self.send_ready(ev.rank, ev.cpu(), ev.nic());
        if free > ev.time {
            self.defer(ev, free, self.send_clocks(c, n));
            return;
        }
        let p = *self.view.net.params(ev.rank, ev.peer, ev.size);
        self.view.program.started(ev.rank, ev.id);
        self.touched.push(ev.rank);
        if self.view.net.rendezvous != Rendezvous::Loggopsim && p.is_rendezvous(ev.size) {
            return self.send_control(ev.with_kind(EvKind::Rts), ev.peer, &p);
        }
        let depart = if self.view.net.nic_model == NicModel::Dma { ev.time.max(self.view.clocks[n]) } else { ev.time };
        let before = [self.view.clocks[c], self.view.clocks[n]];
        self.view.clocks[c] = self.view.noise.cpu_end(ev.rank, ev.time, p.send_cpu(ev.size));
        self.view.clocks[n] = depart + p.send_nic(ev.size);
        let send = Send { c, n, n_before: before[1], depart, waited_for: None, src: ev.rank, dst: ev.peer, size: ev.size };
        self.tell_wait(Wait { rank: ev.rank, before: before[0], at: ev.time, why: OTHER, on: ev.rank }, |o, v, w| o.sent(v, w, send, &p));
        let mut msg = ev.with_kind(EvKind::Msg);
        let arrive = if self.view.net.platform.is_none() {
            self.count_plain(ev.rank, ev.peer, ev.size);
            self.tell(|o, v| o.flew(v, (ev.rank, ev.peer), p.l_ps, 0, 0));
            depart + p.o_ps + p.l_ps
        } else {
            self.arrival(ev.rank, ev.peer, ev.size, depart + p.o_ps, p.l_ps)
        };
        let cpu = Some((ev.time, self.view.clocks[c]));
        let m = Message { stamp: 0, src: ev.rank, dst: ev.peer, cpu, flight: (ev.time, arrive), tag: ev.tag, bytes: ev.size };
        (msg.rank, msg.peer) = (ev.peer, ev.rank);
        if self.flows_on(ev.rank, ev.peer, ev.size) {
            self.start_flow(msg, m, (depart, depart + p.o_ps), arrive, p.big_g_ps);
        } else {
            msg.time = self.handled_from(ev.peer, ev.cpu(), ev.nic(), arrive);
            let stamp = self.queue.push_new(msg);
            self.tell(|o, v| o.message_queued(v, Message { stamp, ..m }));
        }
        if !p.is_rendezvous(ev.size) {
            self.view.program.done(ev.rank, ev.id);
        }
        self.events += 1;
    }

    fn on_recv(&mut self, ev: Event) {
        self.view.program.started(ev.rank, ev.id);
        self.touched.push(ev.rank);
        let l = self.lists(ev.rank);
        match self.matcher.take(&mut self.view.clocks[l], Queue::Unexpected, ev.peer, ev.tag) {
            Some(msg) if msg.rts => {
                // the request-to-send was handled when it arrived; answer it
                let mut cts = Event::new(ev.time, EvKind::Cts, msg.cpu, msg.nic, msg.size, ev.rank, msg.src, ev.id, msg.id)
                    .with_collective(ev.is_collective());
                // (send_control takes its path: the later of the CPU and now)
                let p = *self.view.net.params(msg.src, ev.rank, msg.size);
                cts.time = self.view.clocks[self.o(ev.rank, msg.cpu)].max(ev.time);
                self.send_control(cts, msg.src, &p);
            }
            Some(msg) => {
                // Its CPU cost was charged when it arrived.
                self.complete_rendezvous(msg.src, ev.rank, msg.size, msg.id, (msg.cpu, msg.nic), ev.time, ev.is_collective());
                self.view.program.done(ev.rank, ev.id);
                self.events += 1;
            }
            None => self.matcher.push(
                &mut self.view.clocks[l],
                Queue::Posted,
                Entry { src: ev.peer, tag: ev.tag, size: ev.size, id: ev.id, cpu: ev.cpu(), nic: ev.nic(), rts: false },
            ),
        }
    }

    /// A message (or a handshake's data) reaches its receiver.
    fn on_msg(&mut self, ev: Event) {
        if self.view.net.nic_model == NicModel::Dma && !ev.is_flowed() {
            return self.land(ev);
        }
        let (c, n) = (self.o(ev.rank, ev.cpu()), self.gr(ev.rank, ev.nic()));
        let free = self.view.clocks[c].max(self.view.clocks[n]);
        if free > ev.time {
            self.defer(ev, free, [c, n]);
            return;
        }
        let (src, dst) = (ev.peer, ev.rank);
        let p = *self.view.net.params(src, dst, ev.size);
        let before = self.view.clocks[c];
        // a flow brought the bytes: the CPU copies them (O), the NIC takes the message (g)
        let (cpu, nic) = if ev.is_flowed() { (p.recv_cpu_per_byte_o(ev.size), p.g_ps) } else { (p.recv_cpu(ev.size), p.recv_nic(ev.size)) };
        self.view.clocks[c] = self.view.noise.cpu_end(dst, ev.time, cpu);
        self.view.clocks[n] = ev.time + nic;
        let receipt = Receipt { c, n: Some(n), src, dst, size: ev.size, tag: ev.tag, flowed: ev.is_flowed() };
        let wait = Wait { rank: dst, before, at: ev.time, why: by_peer(LATE_SENDER, &ev), on: src };
        self.tell_wait(wait, |o, v, w| o.received(v, w, receipt, &p));
        self.received(ev);
    }

    /// When a message arriving at `t` on `rank` is first looked at: not
    /// before the receiver's CPU and NIC are free as of now. A message that
    /// finds them busy on arrival is re-queued for when they free up, and
    /// clocks only move forward, so that moment is no earlier than this one.
    /// Queuing it for this moment, with the same stamp, changes nothing (its
    /// handler checks again and re-queues it if the clocks moved on) and
    /// saves a pop and a re-queue: under noise most messages reach a
    /// computing receiver. Not with a DMA NIC, which takes the data whatever
    /// the CPU does, nor with memory-bound work, which parks a CPU at a
    /// sentinel time (`may_deliver_directly`). When explaining, the message
    /// keeps its arrival's path, which explain's `begin` sets aside if it runs later.
    #[inline(always)]
    fn handled_from(&self, rank: u32, cpu: u8, nic: u8, t: Time) -> Time {
        if !self.direct {
            return t;
        }
        t.max(self.view.clocks[self.o(rank, cpu)]).max(self.view.clocks[self.gr(rank, nic)])
    }

    /// Whether the network allows `handled_from`'s shortcut: a LogGOPSim
    /// NIC and no memory domains.
    fn may_deliver_directly(&self) -> bool {
        self.view.net.nic_model == NicModel::Loggopsim && !self.has_memory()
    }

    #[inline(always)]
    fn received(&mut self, ev: Event) {
        if matches!(ev.kind(), EvKind::Data | EvKind::DataLanded) {
            self.finish_data(ev);
        } else {
            self.deliver(ev);
        }
    }

    /// A received message meets the posted receives, or waits as unexpected.
    #[inline(always)]
    fn deliver(&mut self, ev: Event) {
        let (src, dst) = (ev.peer, ev.rank);
        let l = self.lists(dst);
        match self.matcher.take(&mut self.view.clocks[l], Queue::Posted, src, ev.tag) {
            Some(recv) => {
                self.complete_rendezvous(src, dst, ev.size, ev.id, (ev.cpu(), ev.nic()), ev.time, ev.is_collective());
                self.view.program.done(dst, recv.id);
                self.touched.push(dst);
                self.events += 1;
            }
            None => self.matcher.push(
                &mut self.view.clocks[l],
                Queue::Unexpected,
                Entry { src, tag: ev.tag, size: ev.size, id: ev.id, cpu: ev.cpu(), nic: ev.nic(), rts: false },
            ),
        }
    }

    /// A DMA NIC ([`NicModel::Dma`]) takes a message's data as soon as it
    /// is free, whatever the CPU does; the CPU handles the message once the
    /// last byte has landed (`on_landed`).
    #[cold]
    fn land(&mut self, ev: Event) {
        let n = self.gr(ev.rank, ev.nic());
        if !self.free_or_defer(ev, n) {
            return;
        }
        let p = *self.view.net.params(ev.peer, ev.rank, ev.size);
        self.view.clocks[n] = ev.time + p.recv_nic(ev.size);
        let mut landed = ev.with_kind(if ev.kind() == EvKind::Data { EvKind::DataLanded } else { EvKind::Landed });
        landed.time = self.view.clocks[n] - p.g_ps;
        let stamp = landed.stamp();
        self.tell(|o, v| o.landing(v, stamp, n, &p, (ev.peer, ev.rank, ev.size)));
        self.queue.push_again(landed);
    }

    /// The CPU's part of a DMA receive: o + (s−1)·O once it is free.
    #[cold]
    fn on_landed(&mut self, ev: Event) {
        let c = self.o(ev.rank, ev.cpu());
        if !self.free_or_defer(ev, c) {
            return;
        }
        let (src, dst) = (ev.peer, ev.rank);
        let p = *self.view.net.params(src, dst, ev.size);
        let before = self.view.clocks[c];
        self.view.clocks[c] = self.view.noise.cpu_end(dst, ev.time, p.recv_cpu_per_byte_o(ev.size));
        let receipt = Receipt { c, n: None, src, dst, size: ev.size, tag: ev.tag, flowed: false };
        let wait = Wait { rank: dst, before, at: ev.time, why: by_peer(LATE_SENDER, &ev), on: src };
        self.tell_wait(wait, |o, v, w| o.received(v, w, receipt, &p));
        self.received(ev);
    }

    /// With `nic_ports` > 1, the port of `rank`'s NIC that is free first
    /// (the lowest-numbered at a tie).
    fn port(&self, rank: u32) -> u8 {
        self.view.layout.port(&self.view.clocks, rank)
    }

    /// The NIC a ready op uses: its own, or with ports the one free first.
    #[inline(always)]
    fn nic_for(&self, r: u32, op: &ReadyOp) -> u8 {
        self.view.layout.nic_for(&self.view.net, &self.view.clocks, r, op)
    }

    /// When `rank` can next post a send: its CPU is free, and with
    /// LogGOPSim's NIC its NIC too (a DMA NIC queues the message).
    #[inline(always)]
    fn send_ready(&self, rank: u32, cpu: u8, nic: u8) -> Time {
        let c = self.view.clocks[self.o(rank, cpu)];
        match self.view.net.nic_model {
            NicModel::Loggopsim => c.max(self.view.clocks[self.gs(rank, nic)]),
            NicModel::Dma => c,
        }
    }

    /// The clocks a send waits for (see `send_ready`), given its CPU's and NIC's.
    #[inline(always)]
    fn send_clocks(&self, c: usize, n: usize) -> [usize; 2] {
        self.view.layout.send_clocks(self.view.net.nic_model, c, n)
    }

    /// Charges a send of `size` bytes posted at `t` (see `send_ready`): the
    /// CPU o + (s−1)·O, the NIC g + (s−1)·G from when it takes the message,
    /// which it returns.
    #[allow(clippy::too_many_arguments)]
    fn charge_send(&mut self, (rank, dst): (u32, u32), cpu: u8, nic: u8, t: Time, size: u64, p: &LogGOPS) -> Time {
        let (c, n) = (self.o(rank, cpu), self.gs(rank, nic));
        let before = [self.view.clocks[c], self.view.clocks[n]];
        let depart = t.max(self.view.clocks[n]);
        self.view.clocks[c] = self.view.noise.cpu_end(rank, t, p.send_cpu(size));
        self.view.clocks[n] = depart + p.send_nic(size);
        let waited_for = Some(self.send_clocks(c, n));
        let send = Send { c, n, n_before: before[1], depart, waited_for, src: rank, dst, size };
        self.tell_wait(Wait { rank, before: before[0], at: t, why: OTHER, on: rank }, |o, v, w| o.sent(v, w, send, p));
        depart
    }

    /// Sends a handshake's control message `ev` (a request-to-send or a
    /// clear-to-send, kind and ids set) from `ev.rank` to `to` at `ev.time`,
    /// its CPU free by then. Control messages cost o at each end and L in
    /// flight; they take no NIC time and do not queue behind data on the NICs
    /// (their few bytes interleave with the data's packets).
    #[cold]
    fn send_control(&mut self, mut ev: Event, to: u32, p: &LogGOPS) {
        let (from, t) = (ev.rank, ev.time);
        let c = self.o(from, ev.cpu());
        let before = self.view.clocks[c];
        self.view.clocks[c] = self.view.noise.cpu_end(from, t, p.o_ps);
        self.tell_wait(Wait { rank: from, before, at: t, why: OTHER, on: from }, |o, v, w| o.control_sent(v, w, c, to, p));
        ev.time = self.arrival(from, to, 0, t + p.o_ps, p.l_ps);
        (ev.rank, ev.peer) = (to, from);
        let stamp = self.queue.push_new(ev);
        let m = Message { stamp, src: from, dst: to, cpu: None, flight: (t, ev.time), tag: ev.tag, bytes: 0 };
        self.tell(|o, v| o.message_queued(v, m));
    }

    /// Handles a control message's arrival on `ev.rank` (o, once the CPU is
    /// free); false if it was deferred because the CPU is busy.
    fn receive_control(&mut self, ev: Event, p: &LogGOPS) -> bool {
        let c = self.o(ev.rank, ev.cpu());
        if !self.free_or_defer(ev, c) {
            return false;
        }
        let before = self.view.clocks[c];
        self.view.clocks[c] = self.view.noise.cpu_end(ev.rank, ev.time, p.o_ps);
        // a request to send means a late sender; a clear to send, a late receiver
        let why = by_peer(if ev.kind() == EvKind::Rts { LATE_SENDER } else { LATE_RECEIVER }, &ev);
        self.tell_wait(Wait { rank: ev.rank, before, at: ev.time, why, on: ev.peer }, |o, v, w| o.control_received(v, w, c, p));
        true
    }

    /// Whether clock `i` (a CPU's or NIC's) is free at `ev.time`; if not,
    /// `ev` waits until it is.
    fn free_or_defer(&mut self, ev: Event, i: usize) -> bool {
        if self.view.clocks[i] > ev.time {
            self.defer(ev, self.view.clocks[i], [i, i]);
            return false;
        }
        true
    }

    /// A request-to-send reaches the receiver: matched against the posted
    /// receives (answered at once) or kept as unexpected until one is posted.
    #[cold]
    fn on_rts(&mut self, ev: Event) {
        let (src, dst) = (ev.peer, ev.rank);
        let p = *self.view.net.params(src, dst, ev.size);
        if !self.receive_control(ev, &p) {
            return;
        }
        let l = self.lists(dst);
        match self.matcher.take(&mut self.view.clocks[l], Queue::Posted, src, ev.tag) {
            Some(recv) => {
                let mut cts =
                    Event::new(0, EvKind::Cts, ev.cpu(), ev.nic(), ev.size, dst, src, recv.id, ev.id).with_collective(ev.is_collective());
                cts.time = self.view.clocks[self.o(dst, ev.cpu())];
                self.send_control(cts, src, &p);
            }
            None => {
                let e = Entry { src, tag: ev.tag, size: ev.size, id: ev.id, cpu: ev.cpu(), nic: ev.nic(), rts: true };
                self.matcher.push(&mut self.view.clocks[l], Queue::Unexpected, e);
            }
        }
    }

    /// The clear-to-send reaches the sender: once its CPU has handled it,
    /// the data leaves (costed as an eager message) and the send is done.
    /// (With a get rendezvous it is the receiver's read request: `on_get`.)
    #[cold]
    fn on_cts(&mut self, ev: Event) {
        if self.view.net.rendezvous == Rendezvous::Get {
            return self.on_get(ev);
        }
        let (src, dst) = (ev.rank, ev.peer);
        let p = *self.view.net.params(src, dst, ev.size);
        if !self.receive_control(ev, &p) {
            return;
        }
        let t = self.send_ready(src, ev.cpu(), ev.nic());
        let depart = self.charge_send((src, dst), ev.cpu(), ev.nic(), t, ev.size, &p);
        let arrive = self.arrival(src, dst, ev.size, depart + p.o_ps, p.l_ps);
        let mut data = ev.with_kind(EvKind::Data);
        (data.time, data.rank, data.peer) = (arrive, dst, src);
        let cpu = Some((t, self.view.clocks[self.o(src, ev.cpu())]));
        let m = Message { stamp: 0, src, dst, cpu, flight: (depart, arrive), tag: ev.tag, bytes: ev.size };
        if self.flows_on(src, dst, ev.size) {
            self.start_flow(data, m, (depart, depart + p.o_ps), arrive, p.big_g_ps);
        } else {
            let stamp = self.queue.push_new(data);
            self.tell(|o, v| o.message_queued(v, Message { stamp, ..m }));
        }
        self.view.program.done(src, ev.id);
        self.touched.push(src);
        self.events += 1;
    }

    /// A get rendezvous's read request reaches the sender's NIC, which sends
    /// the data as soon as it is free: no CPU time on the sender, whose send
    /// is then complete (as LogGOPSim's rendezvous completes at the match,
    /// without an acknowledgement).
    #[cold]
    fn on_get(&mut self, ev: Event) {
        let (src, dst) = (ev.rank, ev.peer);
        let p = *self.view.net.params(src, dst, ev.size);
        let n = self.gs(src, ev.nic());
        let depart = ev.time.max(self.view.clocks[n]);
        self.view.clocks[n] = depart + p.send_nic(ev.size);
        self.tell(|o, v| o.pulled(v, n, depart, &p, (src, dst, ev.size)));
        let arrive = self.arrival(src, dst, ev.size, depart, p.l_ps);
        let mut data = ev.with_kind(EvKind::Data);
        (data.time, data.rank, data.peer) = (arrive, dst, src);
        let m = Message { stamp: 0, src, dst, cpu: None, flight: (depart, arrive), tag: ev.tag, bytes: ev.size };
        if self.flows_on(src, dst, ev.size) {
            self.start_flow(data, m, (depart, depart), arrive, p.big_g_ps);
        } else {
            let stamp = self.queue.push_new(data);
            self.tell(|o, v| o.message_queued(v, Message { stamp, ..m }));
        }
        self.complete_rendezvous(src, dst, ev.size, ev.id, (ev.cpu(), ev.nic()), ev.time, ev.is_collective());
        self.events += 1;
    }

    /// A handshake rendezvous's data has been received: its receive was
    /// matched at the request-to-send.
    fn finish_data(&mut self, ev: Event) {
        self.view.program.done(ev.rank, ev.tag);
        self.touched.push(ev.rank);
        self.events += 1;
    }

    /// A rendezvous send completes when matched; the sender's CPU and NIC are
    /// then busy until at least now (no acknowledgement latency, as LogGOPSim).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn complete_rendezvous(&mut self, src: u32, dst: u32, size: u64, send_id: u32, (cpu, nic): (u8, u8), now: Time, collective: bool) {
        if !self.view.net.params(src, dst, size).is_rendezvous(size) {
            return;
        }
        self.view.program.done(src, send_id);
        self.touched.push(src);
        let (c, n) = (self.o(src, cpu), self.gs(src, nic));
        let before = [self.view.clocks[c], self.view.clocks[n]];
        self.view.clocks[c] = self.view.clocks[c].max(now);
        self.view.clocks[n] = self.view.clocks[n].max(now);
        let why = if collective { COLLECTIVE } else { LATE_RECEIVER };
        self.tell_wait(Wait { rank: src, before: before[0], at: now, why, on: dst }, |o, v, w| o.rendezvous_done(v, w, (c, n), before[1]));
    }

    /// Queues the ops freed on every touched rank: ranks in ascending order;
    /// per rank sends, then receives, then computations, each in schedule order.
    fn issue_freed(&mut self) -> Result<(), SimError> {
        let mut touched = std::mem::take(&mut self.touched);
        if touched.len() > 1 {
            touched.sort_unstable();
            touched.dedup();
        }
        for &r in &touched {
            let c0 = self.o(r, 0);
            self.view.program.collect(r, self.view.now, self.view.clocks[c0], &mut self.ready).map_err(SimError::Invalid)?;
            if self.ready.len() > 1 {
                self.ready.sort_by_key(|op| op.kind); // stable: keeps schedule order within a kind
            }
            let mut ready = std::mem::take(&mut self.ready);
            for op in ready.drain(..) {
                let ev = self.event_for(r, op)?;
                if op.kind == OpKind::Send && self.fabric.flows.is_some() && self.flows_on(r, op.peer, op.size) {
                    // its flow's links, read when it runs: a few events from now at best
                    self.fabric.prefetch_route(&self.view.net, r, op.peer);
                }
                let stamp = self.queue.push_new(ev);
                self.tell(|o, v| o.issued(v, stamp, r, &op));
            }
            self.ready = ready;
        }
        touched.clear();
        self.touched = touched;
        Ok(())
    }

    /// The queue event that executes `op` of rank `r`, at the time its CPU
    /// (and, for a send, NIC) is next free.
    // (inlined, its checks' messages kept out of line: the event returned
    // through memory stalled the reads that followed)
    #[inline(always)]
    fn event_for(&self, r: u32, op: ReadyOp) -> Result<Event, SimError> {
        let p = self.view.program.num_ranks();
        let bad_peer = op.kind.is_message() && op.peer >= p && !(op.kind == OpKind::Recv && op.peer == ANY);
        let too_large = op.size >= MAX_MESSAGE_BYTES && op.kind != OpKind::Calc;
        if bad_peer || too_large || (op.kind == OpKind::Mem && !self.has_memory()) {
            return Err(self.invalid_op(r, &op));
        }
        let c = self.o(r, op.cpu);
        let (kind, time) = match op.kind {
            OpKind::Send => (EvKind::Send, self.send_ready(r, op.cpu, self.nic_for(r, &op))),
            OpKind::Recv => (EvKind::Recv, self.view.clocks[c]),
            OpKind::Calc => (EvKind::Calc, self.view.clocks[c]),
            OpKind::Probe => (EvKind::Probe, self.view.clocks[c]),
            OpKind::Mem => (EvKind::Mem, self.view.clocks[c]),
        };
        // Never before now: LogGOPSim may start an op on an idle second CPU
        // in the past, before its dependency finished; we do not. (A program
        // issues nothing while its CPU is in memory-bound work.)
        debug_assert!(time != fabric::MEM_BUSY);
        let time = time.max(self.view.now);
        // (the mark only matters to `explain`)
        Ok(Event::new(time, kind, op.cpu, self.nic_for(r, &op), op.size, r, op.peer, op.tag, op.id).with_collective(op.collective))
    }

    /// Why `event_for` refuses `op` of rank `r`.
    #[cold]
    #[inline(never)]
    fn invalid_op(&self, r: u32, op: &ReadyOp) -> SimError {
        // (in the order the checks were always made: peer, size, memory)
        let p = self.view.program.num_ranks();
        if op.kind.is_message() && op.peer >= p && !(op.kind == OpKind::Recv && op.peer == ANY) {
            return SimError::Invalid(format!(
                "rank {r}: {} peer {} is out of range (0..{p})",
                if op.kind == OpKind::Send { "send" } else { "recv" },
                op.peer
            ));
        }
        if op.size >= MAX_MESSAGE_BYTES && op.kind != OpKind::Calc {
            let what = if op.kind == OpKind::Mem { "memory-bound computation" } else { "message" };
            return SimError::Invalid(format!("rank {r}: {what} of {} bytes exceeds the supported 2^47 bytes", op.size));
        }
        fabric::no_memory(r)
    }

    /// After the last event: every rank must be done and nothing left unmatched.
    fn past_limit(&self, t: Time) -> SimError {
        if self.view.noise.too_dense() {
            SimError::Invalid(format!(
                "a single computation crossed more than {} noise detours: the noise is too dense for the work \
                 (lower rate_hz or the work per call) to simulate detour by detour",
                crate::noise::MAX_DETOURS_PER_CHARGE
            ))
        } else {
            SimError::TimeLimit(crate::time::past_limit(t))
        }
    }

    fn check_end(&self) -> Result<(), SimError> {
        let p = self.num_ranks();
        if let Some(t) = (0..p).map(|r| self.finish_time(r)).find(|&t| t > crate::time::TIME_LIMIT) {
            return Err(self.past_limit(t));
        }
        let stuck: Vec<u32> = (0..p).filter(|&r| !self.view.program.is_finished(r)).collect();
        if !stuck.is_empty() {
            return Err(SimError::Deadlock(self.deadlock_report(&stuck)));
        }
        if self.matcher.live() > 0 {
            let mut lines = Vec::new();
            let mut count = 0usize;
            for r in 0..p {
                for e in self.entries(r, Queue::Unexpected) {
                    count += 1;
                    if lines.len() < REPORT_LIMIT {
                        lines.push(format!("message from rank {} to rank {r} (tag {}, {} B) was never received", e.src, e.tag, e.size));
                    }
                }
                for e in self.entries(r, Queue::Posted) {
                    count += 1;
                    if lines.len() < REPORT_LIMIT {
                        lines.push(format!("rank {r}: receive from {} (tag {}) was never matched", who(e.src), tag(e.tag)));
                    }
                }
            }
            return Err(SimError::Unmatched(format!("{count} left; {}", lines.join("; "))));
        }
        Ok(())
    }

    fn deadlock_report(&self, stuck: &[u32]) -> String {
        let p = self.num_ranks();
        // Pending rendezvous sends sit in receivers' unexpected queues.
        let mut rdv_by_sender: std::collections::HashMap<u32, Vec<String>> = Default::default();
        for r in 0..p {
            for e in self.entries(r, Queue::Unexpected) {
                if self.view.net.params(e.src, r, e.size).is_rendezvous(e.size) {
                    rdv_by_sender
                        .entry(e.src)
                        .or_default()
                        .push(format!("send of {} B to rank {r} (tag {}) awaiting a matching receive", e.size, e.tag));
                }
            }
        }
        let mut parts = Vec::new();
        for &r in stuck.iter().take(REPORT_LIMIT) {
            let mut waits: Vec<String> =
                self.entries(r, Queue::Posted).iter().map(|e| format!("receive from {} (tag {})", who(e.src), tag(e.tag))).collect();
            waits.extend(rdv_by_sender.get(&r).cloned().unwrap_or_default());
            let what = self.view.program.describe_stuck(r);
            let detail = if waits.is_empty() { what } else { format!("{what}; pending: {}", waits.join(", ")) };
            parts.push(format!("rank {r} at t={:.9} s: {detail}", crate::time::to_seconds(self.finish_time(r))));
        }
        format!(
            "{} of {p} ranks can never finish{}. {}",
            stuck.len(),
            if stuck.len() > REPORT_LIMIT { format!(" (first {REPORT_LIMIT} shown)") } else { String::new() },
            parts.join(" | ")
        )
    }
}

fn who(src: u32) -> String {
    if src == ANY {
        "any source".into()
    } else {
        format!("rank {src}")
    }
}

fn tag(t: u32) -> String {
    if t == ANY {
        "any".into()
    } else {
        t.to_string()
    }
}

//! Explaining as a probe: what each engine call does to the paths of the
//! clocks it set.

use super::event_paths::{EventPaths, DIRECT_PER_RANK};
#[cfg(test)]
use super::route::COLLECTIONS;
use super::route::{HOPS_PER_EVENT, HOPS_PER_RANK, MIN_HOP_BUDGET, NOWHERE, NO_RANK, UNKNOWN};
use super::*;
use crate::engine::probe::{Loss, NO_LINK};
use crate::engine::{EvKind, MEM_BUSY};
use crate::network::LogGOPS;
use crate::prefetch::{prefetch, prefetch_whole};
use crate::probes::{Findings, Message, Probe, Receipt, Report, Send, View, Wait};
use crate::program::{OpKind, Program, ReadyOp};

/// Explaining as a probe: each call extends the paths of the clocks the
/// engine just set (the heavy work out of line, so that the engine's
/// handlers stay small).
impl Probe for Explain {
    fn attach<P: Program>(&mut self, v: &View<P>) {
        self.init(v);
    }
    #[inline(always)]
    fn begin<P: Program>(&mut self, v: &View<P>, ev: &Event) {
        self.begin_event(v, ev);
    }
    #[inline(always)]
    fn prefetch<P: Program>(&self, v: &View<P>, soon: &Event, near: bool) {
        self.prefetch_for(v, soon, near);
    }
    #[inline(always)]
    fn rank_started(&mut self, rank: u32) {
        // events run straight away at start-up take time 0's empty path, on that rank
        self.cur = Path { hop: 1 + rank, ..Path::default() };
        self.has_cur = true;
        self.cur_clock = NO_CLOCK;
    }
    #[inline(always)]
    fn issued<P: Program>(&mut self, v: &View<P>, stamp: u64, rank: u32, op: &ReadyOp) {
        self.issue(v, stamp, v.op_clocks(rank, op), op.kind == OpKind::Recv);
    }
    #[inline(always)]
    fn requeued_now(&mut self, stamp: u64) {
        // it takes the current event's path (if it has one; else its clocks' when it runs)
        if self.has_cur {
            self.store(stamp, self.cur);
        }
    }
    fn released<P: Program>(&mut self, v: &View<P>, stamp: u64, c: usize) {
        let path = self.latest(v, [(c, v.clocks[c]); 2], true);
        self.store(stamp, path);
    }
    #[inline(always)]
    fn computed<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, work: Time) -> Time {
        let idle = self.wait(wait);
        self.compute(v, c, wait.at, work);
        idle
    }
    #[inline(always)]
    fn tested<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize) -> Time {
        self.computed(v, wait, c, 0)
    }
    #[inline(always)]
    fn sent<P: Program>(&mut self, v: &View<P>, wait: Wait, s: Send, p: &LogGOPS) -> Time {
        // posted when its clocks freed up: the latest of them, as they were
        let before = |i: usize| if i == s.c { wait.before } else { s.n_before };
        let base = match s.waited_for {
            None => self.cur_path(),
            Some([a, b]) => self.latest(v, [(a, before(a)), (b, before(b))], false),
        };
        let idle = self.wait(wait);
        self.send(v, base, (s.c, s.n), (wait.at, s.depart), p, (s.src, s.dst, s.size));
        idle
    }
    #[inline(always)]
    fn control_sent<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, to: u32, p: &LogGOPS) -> Time {
        // it was sent at the later of the CPU's clock and now
        let base = self.latest(v, [(c, wait.before); 2], true);
        let idle = self.wait(wait);
        self.control(v, base, c, wait.at, p, (wait.rank, to));
        idle
    }
    #[inline(always)]
    fn pulled<P: Program>(&mut self, v: &View<P>, n: usize, depart: Time, p: &LogGOPS, (src, dst, size): (u32, u32, u64)) {
        // read from the NIC as the request arrived, or after its previous message
        let class = v.net.class(src, dst);
        let out = if depart > v.now { self.clocks[self.slot(n)] } else { self.cur_path() };
        let mut nic = out;
        nic.nic(class, p, size);
        self.set(v, n, nic);
        self.msg = out;
    }
    #[inline(always)]
    fn control_received<P: Program>(&mut self, v: &View<P>, wait: Wait, c: usize, p: &LogGOPS) -> Time {
        let idle = self.wait(wait);
        self.control_in(v, c, p, (wait.on, wait.rank));
        idle
    }
    #[inline(always)]
    fn flew<P: Program>(&mut self, v: &View<P>, (src, dst): (u32, u32), latency: Time, hops: Time, extra: Time) {
        let class = v.net.class(src, dst);
        let m = &mut self.msg;
        m.add(WIRE, latency + hops);
        m.add_count(class, L, 1);
        m.add(PENALTY, extra);
    }
    #[inline(always)]
    fn message_queued<P: Program>(&mut self, _v: &View<P>, m: Message) {
        // it takes the path built for it (`send`, `control`, then `flew`;
        // for a flow's, `flow_ended`)
        self.store(m.stamp, self.msg);
        if let Some(link) = self.flow_link.take() {
            self.msg_links.insert(m.stamp, link);
        }
    }
    fn flow_started<P: Program>(&mut self, v: &View<P>, id: u32, m: &Message) {
        // the message's path as it would arrive alone, kept until its bytes are in
        let p = v.net.params(m.src, m.dst, m.bytes);
        let alone_nic = (m.bytes.saturating_sub(1) as f64 * p.big_g_ps).ceil() as Time;
        self.flows.insert(id, (self.msg, v.net.class(m.src, m.dst), m.bytes, alone_nic, p.big_g_ps));
    }
    fn flow_waits<P: Program>(&mut self, _v: &View<P>, slot: u32) {
        self.leaving.insert(slot, self.msg);
    }
    fn flow_leaves<P: Program>(&mut self, _v: &View<P>, slot: u32) {
        self.msg = self.leaving.remove(&slot).expect("a send told waiting");
    }
    fn flow_ended<P: Program>(&mut self, _v: &View<P>, id: u32, loss: Loss) {
        self.flowed(id, loss);
    }
    #[inline(always)]
    fn rendezvous_done<P: Program>(&mut self, v: &View<P>, wait: Wait, (c, n): (usize, usize), n_before: Time) -> Time {
        self.complete(v, wait, (c, n), n_before)
    }
    #[inline(always)]
    fn received<P: Program>(&mut self, v: &View<P>, wait: Wait, r: Receipt, p: &LogGOPS) -> Time {
        let idle = self.wait(wait);
        match r.n {
            Some(n) if r.flowed => self.receive_flowed(v, (r.c, n), p, (r.src, r.dst, r.size)),
            Some(n) => self.receive(v, (r.c, n), p, (r.src, r.dst, r.size)),
            None => self.landed(v, r.c, p, (r.src, r.dst, r.size)),
        }
        idle
    }
    #[inline(always)]
    fn landing<P: Program>(&mut self, v: &View<P>, stamp: u64, n: usize, p: &LogGOPS, msg: (u32, u32, u64)) {
        let path = self.land(v, n, p, msg);
        self.store(stamp, path);
    }
    fn mem_started<P: Program>(&mut self, _v: &View<P>, wait: Wait, cpu: u8, bytes: u64) -> Time {
        let idle = self.wait(wait);
        let start = self.cur().copied().unwrap_or_default();
        self.mem.insert((wait.rank, cpu), (start, bytes));
        idle
    }
    #[inline(always)]
    fn mem_finished<P: Program>(&mut self, v: &View<P>, at: (u32, u8, usize), span: (Time, Time), core_bytes_per_ps: f64) {
        self.mem_end(v, at, span, core_bytes_per_ps);
    }
}

impl Report for Explain {
    fn report<P: Program>(&mut self, v: &View<P>, out: &mut Findings) {
        out.explained = Some(self.explanation(v));
    }
}

impl Explain {
    /// Keeps the critical path from now on (before the run starts).
    fn init<P: Program>(&mut self, v: &View<P>) {
        let stride = v.layout.stride;
        let per_rank = stride - LISTS;
        let ranks = v.num_ranks() as usize;
        // every clock starts on its rank, at hop 1 + rank
        let clocks = (0..ranks * per_rank).map(|i| Path { hop: (1 + i / per_rank) as u32, ..Path::default() });
        let hop_budget = MIN_HOP_BUDGET.max(HOPS_PER_RANK * ranks);
        #[cfg(test)]
        let hop_budget = match COLLECTIONS.get().2 {
            0 => hop_budget,
            b => b,
        };
        *self = Explain {
            clocks: clocks.collect(),
            waits: vec![Waits::default(); ranks],
            hops: Vec::with_capacity(1 + ranks + HOPS_PER_EVENT),
            hop_rank: Vec::with_capacity(1 + ranks + HOPS_PER_EVENT),
            // tests: a few entries, so that stamps often overflow
            events: EventPaths::new(if cfg!(test) { 4 } else { (DIRECT_PER_RANK * ranks).next_power_of_two().max(1 << 8) }),
            collect_at: if cfg!(test) { 64 } else { 2 * hop_budget },
            hop_budget,
            cur_clock: NO_CLOCK,
            stride: Divisor::new(stride),
            ..Default::default()
        };
        self.push_hop(NO_RANK, NOWHERE);
        for rank in 0..ranks as u32 {
            self.push_hop(rank, Hop { iteration: v.program.iteration(rank).unwrap_or(UNKNOWN), ..NOWHERE });
        }
    }

    /// Brings into cache what the event `soon` is about to read: far ahead,
    /// its rank's clock paths and its entry in the events' table; nearer
    /// (`near`), the path that entry names.
    #[inline(always)]
    fn prefetch_for<P: Program>(&self, v: &View<P>, soon: &Event, near: bool) {
        if near {
            self.events.prefetch_path(soon.stamp());
            return;
        }
        self.events.prefetch_entry(soon.stamp());
        let rank = soon.rank;
        // its wait counters, added to when it ends a wait
        prefetch(&self.waits, rank as usize);
        let per_rank = v.layout.stride - LISTS;
        let first = rank as usize * per_rank;
        for i in first..first + per_rank {
            prefetch_whole(&self.clocks, i);
        }
    }

    /// The makespan's path.
    pub fn explanation<P: Program>(&self, v: &View<P>) -> Explained {
        let p = v.num_ranks();
        let makespan = (0..p).map(|r| v.finish_time(r)).max().unwrap_or(0);
        let last_rank = (0..p).find(|&r| v.finish_time(r) == makespan).unwrap_or(0);
        let inputs = (0..p)
            .flat_map(|r| (0..v.layout.ncpu).map(move |c| v.layout.o(r, c as u8)))
            .filter(|&i| v.clocks[i] == makespan)
            .map(|i| (v.clocks[i], self.clock(i)));
        let path = latest(&inputs.collect::<Vec<_>>()).unwrap_or_default();
        let route = self.route(&path);
        Explained { makespan, last_rank, path, peak_bytes: self.bytes(), waits: self.waits.clone(), route, link_names: Vec::new() }
    }

    /// An event was popped: its path becomes the current one. Only events
    /// whose time no clock holds have their path stored (messages in flight,
    /// ops freed by another resource's event); for the others it is the
    /// path of the clocks they waited for, which still hold their time.
    #[inline(never)]
    fn begin_event<P: Program>(&mut self, v: &View<P>, ev: &Event) {
        if self.hops.len() >= self.collect_at {
            self.collect();
        }
        // a message queued for its receiver's free moment (`handled_from`)
        // carries its arrival's path: at a later time, it is the clocks'
        // (read in place: a stored path is 128 bytes, copied only into `cur`)
        if let Some(s) = self.events.remove(ev.stamp()).filter(|s| s.total() == ev.time) {
            // a path from the rank's own clocks is on that rank (`arrive` made
            // it so): only a stored one may come from elsewhere
            let elsewhere = self.hop_rank[s.hop as usize] != ev.rank;
            let link = if self.msg_links.is_empty() { None } else { self.msg_links.remove(&ev.stamp()) };
            self.arriving = elsewhere.then_some(Arrival { rank: ev.rank, from: s.hop, at: s.ps, hop: None, link });
            self.cur = *s;
            self.has_cur = true;
            self.cur_clock = NO_CLOCK;
        } else {
            self.arriving = None;
            if !self.msg_links.is_empty() {
                self.msg_links.remove(&ev.stamp());
            }
            let mut cur_clock = NO_CLOCK;
            let cur = resources(v, ev).and_then(|[a, b]| {
                let at = [a, b].into_iter().filter(|&i| v.clocks[i] == ev.time);
                let mut slots = at.map(|i| self.slot(i));
                let first = slots.next()?;
                match slots.next().filter(|&s| s != first) {
                    // two clocks tie: their paths' counts are compared
                    Some(second) => latest(&[first, second].map(|s| (ev.time, &self.clocks[s]))),
                    None => {
                        cur_clock = first;
                        Some(self.clocks[first])
                    }
                }
            });
            self.has_cur = cur.is_some();
            self.cur_clock = cur_clock;
            if let Some(p) = cur {
                self.cur = p;
            }
        }
        debug_assert!(self.cur().is_none_or(|p| p.total() == ev.time), "path {:?} for {ev:?}", self.cur());
        debug_assert!(self.cur().is_none_or(|p| (self.hop_rank[p.hop as usize] != ev.rank) == self.arriving.is_some()));
    }

    /// An op was queued with `stamp` for the latest of clocks `idx` and
    /// now: its path is stored if now decided its time, or if the op runs at
    /// that time whatever its clocks do by then (`fixed`: a receive is
    /// posted without waiting for the CPU).
    fn issue<P: Program>(&mut self, v: &View<P>, stamp: u64, [a, b]: [usize; 2], fixed: bool) {
        if fixed || (v.clocks[a] <= v.now && v.clocks[b] <= v.now) {
            let path = self.latest(v, [(a, v.clocks[a]), (b, v.clocks[b])], true);
            self.store(stamp, path);
        }
    }

    /// A CPU's wait ended (see [`Wait`]): counted by what ended it. Returns
    /// the idle time (0 if none, or if the CPU was in a memory-bound
    /// computation, whose end is not a wait).
    fn wait(&mut self, w: Wait) -> Time {
        let idle = w.at.saturating_sub(w.before);
        if idle == 0 || w.before == MEM_BUSY {
            return 0;
        }
        let waits = &mut self.waits[w.rank as usize];
        match w.why {
            LATE_SENDER => waits.late_sender += idle,
            LATE_RECEIVER => waits.late_receiver += idle,
            COLLECTIVE => waits.collective += idle,
            _ => waits.other += idle,
        }
        if idle > waits.longest {
            (waits.longest, waits.longest_on) = (idle, w.on);
        }
        idle
    }

    /// The current event's path (at its time).
    fn cur_path(&self) -> Path {
        self.cur().copied().unwrap_or_default()
    }

    /// The path of the latest of clocks `inputs` (index, time: a clock's
    /// time may be the one it held before the charge the call is about)
    /// and, if `with_now`, the current event. A clock given twice is one input.
    fn latest<P: Program>(&self, v: &View<P>, [(a, ta), (b, tb)]: [(usize, Time); 2], with_now: bool) -> Path {
        let (sa, sb) = (self.slot(a), self.slot(b));
        // the current path copies a clock now at its time: the same input
        let is_cur = |slot: usize, t: Time| {
            let same = slot == self.cur_clock && t == v.now;
            debug_assert!(!same || self.cur() == Some(&self.clocks[slot]), "clock slot {slot} is not the current path");
            same
        };
        // (a clock given twice is the same path: `latest` takes it once)
        let inputs = [(ta, &self.clocks[sa]), (tb, &self.clocks[sb]), (v.now, &self.cur)];
        let with_now = with_now && self.has_cur && !is_cur(sa, ta) && !is_cur(sb, tb);
        latest(&inputs[..if with_now { 3 } else { 2 }]).unwrap_or_default()
    }

    /// Clock `i` is now `v.clocks[i]`, reached by `path`.
    fn set<P: Program>(&mut self, v: &View<P>, i: usize, mut path: Path) {
        let rank = self.stride.div(i) as u32;
        debug_assert_eq!(path.total(), v.clocks[i], "clock {i}");
        if self.slot(i) == self.cur_clock {
            self.cur_clock = NO_CLOCK;
        }
        let hops = self.hops.len();
        path.hop = self.arrive(&path, rank);
        *self.clock_mut(i) = path;
        if self.hops.len() > hops {
            // a new hop: the iteration the rank is in
            self.hops[path.hop as usize].iteration = v.program.iteration(rank).unwrap_or(UNKNOWN);
        }
    }

    /// `path`, the time a CPU charge on clock `c` was ready at `start`, as
    /// the start of that charge. Where a detour holds the CPU at `start`,
    /// the charge starts when the detour ends whenever it was ready, so no
    /// parameter before it moves the end: the counts (the slopes) start
    /// again from zero there, while the causes still sum to the time.
    fn charge_from<P: Program>(&self, v: &View<P>, path: &mut Path, c: usize, start: Time) {
        let rank = self.stride.div(c) as u32;
        if v.noise.charge_started_in_detour(rank, start) {
            path.restart_counts();
        }
    }

    /// A computation of `work` ps from the current event's time set CPU clock `c`.
    #[inline(never)]
    fn compute<P: Program>(&mut self, v: &View<P>, c: usize, start: Time, work: Time) {
        let mut path = self.cur_path();
        self.charge_from(v, &mut path, c, start);
        path.add(COMPUTE, work);
        path.noise(start, work, v.clocks[c]);
        self.set(v, c, path);
    }

    /// A send of `size` bytes from `src` to `dst`, posted at `start` (path
    /// `base`), set CPU clock `c` and NIC clock `n`; its data left at
    /// `depart`. Leaves the path of `depart` + o (what `flew` extends) in `msg`.
    #[inline(never)]
    fn send<P: Program>(
        &mut self,
        v: &View<P>,
        base: Path,
        (c, n): (usize, usize),
        (start, depart): (Time, Time),
        p: &LogGOPS,
        (src, dst, size): (u32, u32, u64),
    ) {
        let class = v.net.class(src, dst);
        let mut cpu = base;
        self.charge_from(v, &mut cpu, c, start);
        cpu.send_cpu(class, p, size);
        cpu.noise(start, p.send_cpu(size), v.clocks[c]);
        self.set(v, c, cpu);
        // with a DMA NIC the data may leave after the NIC's previous message
        // (the NIC clock's path, not yet set)
        let mut out = if depart > start { self.clocks[self.slot(n)] } else { base };
        let mut nic = out;
        nic.nic(class, p, size);
        self.set(v, n, nic);
        out.add(OVERHEAD, p.o_ps);
        out.add_count(class, O_CPU, 1);
        self.msg = out;
    }

    /// A message of `size` bytes from `src` arrived (the current event) and
    /// set CPU clock `c` and NIC clock `n` of its receiver.
    #[inline(never)]
    fn receive<P: Program>(&mut self, v: &View<P>, (c, n): (usize, usize), p: &LogGOPS, (src, dst, size): (u32, u32, u64)) {
        let class = v.net.class(src, dst);
        let base = self.cur_path();
        let mut cpu = base;
        self.charge_from(v, &mut cpu, c, v.now);
        cpu.recv_cpu(class, p, size);
        cpu.noise(v.now, p.recv_cpu(size), v.clocks[c]);
        self.set(v, c, cpu);
        let mut nic = base;
        nic.nic(class, p, size);
        self.set(v, n, nic);
    }

    /// A message whose bytes came as a flow (the current event) set CPU
    /// clock `c` (o + (s − 1)·O) and NIC clock `n` (g) of its receiver.
    #[inline(never)]
    fn receive_flowed<P: Program>(&mut self, v: &View<P>, (c, n): (usize, usize), p: &LogGOPS, (src, dst, size): (u32, u32, u64)) {
        let class = v.net.class(src, dst);
        let base = self.cur_path();
        let mut cpu = base;
        self.charge_from(v, &mut cpu, c, v.now);
        cpu.recv_cpu_dma(class, p, size);
        cpu.noise(v.now, p.recv_cpu_per_byte_o(size), v.clocks[c]);
        self.set(v, c, cpu);
        let mut nic = base;
        nic.add(NIC, p.g_ps);
        nic.add_count(class, GAP, 1);
        self.set(v, n, nic);
    }

    /// Flow `id` ended: its message's path (kept when it started) takes the
    /// flow's duration: (s − 1)·G of it the NIC's, as the message alone would
    /// have paid at its receiver, the rest the links' (penalty), named by the
    /// link that cost it the most. Its G count: none where a link narrower
    /// than its NIC set its pace alone; where it shared its receiver's NIC
    /// (whose bandwidth is 1/G as well), its whole duration in bytes at 1/G;
    /// else its s − 1 bytes. Exact where one link, or its own NIC, set its
    /// pace throughout. The message's path is left in `msg`.
    #[inline(never)]
    fn flowed(&mut self, id: u32, loss: Loss) {
        let Some((mut path, class, size, alone_nic, big_g_ps)) = self.flows.remove(&id) else { return };
        let nic = alone_nic.min(loss.duration_ps);
        path.add(NIC, nic);
        if alone_nic >= loss.alone_ps {
            let bytes =
                if loss.nic_in && big_g_ps > 0.0 { (loss.duration_ps as f64 / big_g_ps).round() as u64 } else { size.saturating_sub(1) };
            path.add_count(class, G_BYTE, bytes);
        }
        let links = loss.duration_ps - nic;
        path.add(PENALTY, links);
        self.msg = path;
        self.flow_link = (loss.link != NO_LINK && links > 0).then_some((loss.link, links));
    }

    /// With a DMA NIC: the NIC took the message (clock `n`); the CPU's part
    /// is queued for the NIC's end minus g, with the path returned.
    #[inline(never)]
    fn land<P: Program>(&mut self, v: &View<P>, n: usize, p: &LogGOPS, (src, dst, size): (u32, u32, u64)) -> Path {
        let class = v.net.class(src, dst);
        let mut nic = self.cur_path();
        nic.nic(class, p, size);
        self.set(v, n, nic);
        let mut landed = nic;
        landed.ps[NIC] -= p.g_ps;
        landed.crossings[class][GAP] -= 1;
        landed
    }

    /// With a DMA NIC: the CPU handled a landed message (clock `c`).
    #[inline(never)]
    fn landed<P: Program>(&mut self, v: &View<P>, c: usize, p: &LogGOPS, (src, dst, size): (u32, u32, u64)) {
        let class = v.net.class(src, dst);
        let mut cpu = self.cur_path();
        self.charge_from(v, &mut cpu, c, v.now);
        cpu.recv_cpu_dma(class, p, size);
        cpu.noise(v.now, p.recv_cpu_per_byte_o(size), v.clocks[c]);
        self.set(v, c, cpu);
    }

    /// A control message's o from `base` at `start` set CPU clock `c`; the
    /// message's path (o, then `flew`) is left in `msg`.
    #[inline(never)]
    fn control<P: Program>(&mut self, v: &View<P>, base: Path, c: usize, start: Time, p: &LogGOPS, (from, to): (u32, u32)) {
        let class = v.net.class(from, to);
        let mut cpu = base;
        self.charge_from(v, &mut cpu, c, start);
        cpu.add(OVERHEAD, p.o_ps);
        cpu.add_count(class, O_CPU, 1);
        cpu.noise(start, p.o_ps, v.clocks[c]);
        self.set(v, c, cpu);
        let mut out = base;
        out.add(OVERHEAD, p.o_ps);
        out.add_count(class, O_CPU, 1);
        self.msg = out;
    }

    /// A control message's arrival (the current event) cost o on CPU clock `c`.
    #[inline(never)]
    fn control_in<P: Program>(&mut self, v: &View<P>, c: usize, p: &LogGOPS, (from, to): (u32, u32)) {
        let class = v.net.class(from, to);
        let mut cpu = self.cur_path();
        self.charge_from(v, &mut cpu, c, v.now);
        cpu.add(OVERHEAD, p.o_ps);
        cpu.add_count(class, O_CPU, 1);
        cpu.noise(v.now, p.o_ps, v.clocks[c]);
        self.set(v, c, cpu);
    }

    /// A rendezvous send completed (see `Probe::rendezvous_done`): each of
    /// its clocks takes the later of its own path and the current event's.
    #[inline(never)]
    fn complete<P: Program>(&mut self, v: &View<P>, wait: Wait, (c, n): (usize, usize), n_before: Time) -> Time {
        let pc = self.latest(v, [(c, wait.before); 2], true);
        let pn = self.latest(v, [(n, n_before); 2], true);
        let idle = self.wait(wait);
        self.set(v, c, pc);
        self.set(v, n, pn);
        idle
    }

    /// A memory-bound computation ended at `mem_end` on CPU clock `c` (which
    /// holds that end with any detours after it). The time it would have
    /// taken alone at the core's bandwidth is computation; the rest, up to
    /// `mem_end`, is contention for the socket's bandwidth.
    #[inline(never)]
    fn mem_end<P: Program>(
        &mut self,
        v: &View<P>,
        (rank, cpu, c): (u32, u8, usize),
        (start, mem_end): (Time, Time),
        core_bytes_per_ps: f64,
    ) {
        let (mut path, bytes) = self.mem.remove(&(rank, cpu)).unwrap_or_default();
        self.charge_from(v, &mut path, c, start);
        let alone = ((bytes as f64 / core_bytes_per_ps).ceil() as Time).min(mem_end - start);
        path.add(COMPUTE, alone);
        path.add(MEMORY, mem_end - start - alone);
        path.add(NOISE, v.clocks[c] - mem_end);
        self.has_cur = false;
        self.cur_clock = NO_CLOCK;
        self.set(v, c, path);
    }
}

/// The clocks an event waits for before it runs (as `defer` is told).
fn resources<P: Program>(v: &View<P>, ev: &Event) -> Option<[usize; 2]> {
    let c = v.layout.o(ev.rank, ev.cpu());
    Some(match ev.kind() {
        EvKind::Calc | EvKind::Probe | EvKind::Mem | EvKind::Recv => [c, c],
        EvKind::Send => v.layout.send_clocks(v.net.nic_model, c, v.layout.gs(ev.rank, ev.nic())),
        EvKind::Msg | EvKind::Data if v.net.nic_model == crate::network::NicModel::Dma && !ev.is_flowed() => {
            let n = v.layout.gr(ev.rank, ev.nic());
            [n, n]
        }
        EvKind::Msg | EvKind::Data => [c, v.layout.gr(ev.rank, ev.nic())],
        EvKind::Rts | EvKind::Cts | EvKind::Landed | EvKind::DataLanded => [c, c],
        EvKind::MemDone | EvKind::FlowDone | EvKind::FlowSolve | EvKind::FlowStart => return None,
    })
}

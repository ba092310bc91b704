//! Shared links in whole runs against closed forms: incast, a shift across
//! a tapered fat tree, two flows on one torus link, a dragonfly's global
//! link under minimal, Valiant and UGAL routing; and no change where no
//! link is shared.

use super::*;
use crate::network::{LinkModel, Platform, Routes, Routing, Topology};
use crate::program::stream::{StreamOp, StreamProgram};
use crate::record::Recorder;
use crate::workloads::Script;
use StreamOp::*;

/// L = 1 µs, o = g = O = 0, G = 1 ps per byte (a NIC moves 1 B/ps), eager
/// at every size, one rank per node.
fn platform(topology: Topology, links: LinkModel) -> Platform {
    let json = r#"{"inter_node": {"eager": {"l_ps": 1000000, "o_ps": 0, "g_ps": 0, "big_g_ps_per_byte": 1.0,
        "big_o_ps_per_byte": 0.0, "s_bytes": 1000000000000}}, "ranks_per_node": 1}"#;
    let mut pl: Platform = serde_json::from_str(json).unwrap();
    (pl.topology, pl.links) = (topology, links);
    pl
}

fn flow(bytes_per_ps: f64, taper: f64, routing: Routing) -> LinkModel {
    LinkModel { flow: true, bytes_per_ps, global_bytes_per_ps: bytes_per_ps, taper, routing, resolve_interval_ps: 0 }
}

const L: Time = 1_000_000;
/// Bytes per message: (s − 1) = 1 MB moved at the per-byte rates.
const S: u64 = 1_000_001;

/// Each rank's sends (to, bytes) and receives (from, bytes), all posted at 0 and waited for.
fn exchange(ranks: u32, pairs: &[(u32, u32)]) -> Vec<Vec<StreamOp>> {
    (0..ranks)
        .map(|r| {
            let mut ops: Vec<StreamOp> = Vec::new();
            let mut slot = 0u8;
            for &(a, b) in pairs {
                if a == r {
                    ops.push(ISend { peer: b, tag: a, bytes: S, slot });
                    slot += 1;
                }
                if b == r {
                    ops.push(IRecv { peer: a, tag: a, bytes: S, slot });
                    slot += 1;
                }
            }
            ops.push(Wait(((1u64 << slot) - 1) as _));
            ops
        })
        .collect()
}

fn run(pl: Platform, ops: Vec<Vec<StreamOp>>) -> Engine<StreamProgram<Script>> {
    let net = Network { ranks_per_node: pl.ranks_per_node, ..Network::uniform(pl.inter_node.eager) };
    let net = Network { platform: Some(Box::new(pl)), ..net };
    let mut e =
        Engine::new(StreamProgram::new(Script { ranks: ops, ..Default::default() }, Recorder::disabled()), net, Noise::none()).unwrap();
    e.run().unwrap();
    e
}

fn makespan(pl: Platform, ops: Vec<Vec<StreamOp>>) -> Time {
    let e = run(pl, ops);
    (0..e.num_ranks()).map(|r| e.finish_time(r)).max().unwrap()
}

#[test]
fn incast_shares_the_receivers_nic_and_ends_as_loggopsim_does() {
    // n senders to rank 0: its NIC in takes 1/n each, every flow ends at n MB;
    // LogGOPSim's receiving NIC takes the messages one after another: the same end.
    for n in [1u32, 2, 5, 8] {
        let pairs: Vec<(u32, u32)> = (1..=n).map(|a| (a, 0)).collect();
        let flows = makespan(platform(Topology::FullyConnected, flow(0.0, 1.0, Routing::DimensionOrder)), exchange(n + 1, &pairs));
        let none = makespan(platform(Topology::FullyConnected, LinkModel::default()), exchange(n + 1, &pairs));
        assert_eq!(flows, n as Time * (S - 1) + L, "n={n}");
        assert_eq!(flows, none, "n={n}");
    }
}

#[test]
fn flows_that_start_and_end_at_one_instant_are_re_solved_once() {
    // The incast's n senders start at 0 (o = g = 0) on the receiver's NIC and
    // end together: one re-solve for the n starts, one for the n ends (a
    // re-solve after each change would run 2n − 2 of them, each over the
    // flows still in flight: the square of the flows, as in a halo exchange
    // on a machine with o = g = 0).
    for n in [2u32, 5, 8] {
        let pairs: Vec<(u32, u32)> = (1..=n).map(|a| (a, 0)).collect();
        let e = run(platform(Topology::FullyConnected, flow(0.0, 1.0, Routing::DimensionOrder)), exchange(n + 1, &pairs));
        let flows = e.fabric.flows.as_deref().expect("flows on");
        assert_eq!((flows.flowed, flows.resolves), (n as u64, 2), "n={n}");
    }
}

#[test]
fn a_resolve_interval_batches_the_changes_within_it_and_keeps_the_link_busy() {
    // Eight senders to rank 0, sender a starting (a − 1)·I/16 late: all
    // within one interval I. Exact, each later start re-solves (7), and the
    // first flow's head start makes every end a separate instant; with the
    // interval the seven later flows wait for I (sending nothing), one
    // re-solve shares the NIC, the first flow ends alone and the seven
    // together: 3 re-solves. The receiver's NIC is busy from 0 either way,
    // so the last byte arrives at 8 MB-times in both (B is a multiple of I).
    const I: Time = 10_000;
    let stagger = |interval: Time| {
        let pairs: Vec<(u32, u32)> = (1..=8).map(|a| (a, 0)).collect();
        let mut ops = exchange(9, &pairs);
        for (a, rank) in ops.iter_mut().enumerate().skip(2) {
            rank.insert(0, Calc((a as Time - 1) * I / 16));
        }
        let links = LinkModel { resolve_interval_ps: interval, ..flow(0.0, 1.0, Routing::DimensionOrder) };
        run(platform(Topology::FullyConnected, links), ops)
    };
    let (exact, batched) = (stagger(0), stagger(I));
    let end = |e: &Engine<StreamProgram<Script>>| (0..e.num_ranks()).map(|r| e.finish_time(r)).max().unwrap();
    // (within the picosecond rounding of the rates' completions)
    for e in [&exact, &batched] {
        assert!(end(e).abs_diff(8 * (S - 1) + L) <= 2, "{}", end(e));
    }
    let resolves = |e: &Engine<StreamProgram<Script>>| e.fabric.flows.as_deref().expect("flows on").resolves;
    assert_eq!(resolves(&batched), 3);
    assert!(resolves(&exact) >= 14, "{}", resolves(&exact));
}

#[test]
fn a_step_ends_after_as_much_re_solving_as_its_budget_of_events() {
    // An incast of 600 messages of different sizes: each of the 600 ends re-solves the flows still in
    // flight, about 180,000 flows crossed in all. The caller checks for Ctrl-C between steps, so a step
    // of 2,048 events ends at its first check (event 1,024), the budget's worth of re-solving being done
    // by then; the run ends as in one step.
    let n = 600u32;
    let ops = |n: u32| -> Vec<Vec<StreamOp>> {
        let root: Vec<StreamOp> =
            (1..=n).flat_map(|a| [IRecv { peer: a, tag: 0, bytes: 1000 + 10 * a as u64, slot: 0 }, Wait(1)]).collect();
        std::iter::once(root)
            .chain((1..=n).map(|a| vec![ISend { peer: 0, tag: 0, bytes: 1000 + 10 * a as u64, slot: 0 }, Wait(1)]))
            .collect()
    };
    let pl = platform(Topology::FullyConnected, flow(0.0, 1.0, Routing::DimensionOrder));
    let net = Network { ranks_per_node: 1, ..Network::uniform(pl.inter_node.eager) };
    let net = Network { platform: Some(Box::new(pl.clone())), ..net };
    let mut e =
        Engine::new(StreamProgram::new(Script { ranks: ops(n), ..Default::default() }, Recorder::disabled()), net, Noise::none()).unwrap();
    assert!(!e.step(2048).unwrap(), "a step of 2,048 events ended early");
    let (work, events) = (e.fabric.flows.as_deref().unwrap().work, e.events);
    assert!(work > 2048, "at its first check, after re-solving {work} flows and links");
    let mut steps = 1;
    while !e.step(2048).unwrap() {
        steps += 1;
    }
    let whole = run(pl, ops(n));
    assert!(events < whole.events && steps > 2, "{events} of {} events, {steps} steps", whole.events);
    assert_eq!((0..=n).map(|r| e.finish_time(r)).collect::<Vec<_>>(), (0..=n).map(|r| whole.finish_time(r)).collect::<Vec<_>>());
}

#[test]
fn a_shift_across_a_tapered_fat_tree_takes_taper_times_longer() {
    // 16 nodes, 2 per leaf; every node sends to the one 8 away: each message
    // crosses the top of the tree. Links run at the NIC's 1 B/ps; tapered by t,
    // the links between switches at 1/t. d-mod-k gives every message its own
    // links, so each moves at min(1, 1/t).
    let shift: Vec<(u32, u32)> = (0..16).map(|a| (a, (a + 8) % 16)).collect();
    for taper in [1.0, 2.0, 4.0] {
        let t = makespan(platform(Topology::FatTree { radix: 4 }, flow(1.0, taper, Routing::DModK)), exchange(16, &shift));
        assert_eq!(t, (taper * (S - 1) as f64) as Time + L, "taper {taper}");
    }
    // random up-links collide: never faster, here slower
    let dmodk = makespan(platform(Topology::FatTree { radix: 4 }, flow(1.0, 1.0, Routing::DModK)), exchange(16, &shift));
    let random = makespan(platform(Topology::FatTree { radix: 4 }, flow(1.0, 1.0, Routing::Random)), exchange(16, &shift));
    assert!(random > dmodk, "{random} vs {dmodk}");
    let again = makespan(platform(Topology::FatTree { radix: 4 }, flow(1.0, 1.0, Routing::Random)), exchange(16, &shift));
    assert_eq!(random, again, "seeded");
    // with shared links off, the tree's links are never a limit
    let none = makespan(platform(Topology::FatTree { radix: 4 }, LinkModel::default()), exchange(16, &shift));
    assert_eq!(none, dmodk);
}

#[test]
fn two_flows_on_one_torus_link_take_half_of_it_each() {
    // A ring of 4 (torus 4×1×1), links of 0.5 B/ps (below the NICs' 1 B/ps).
    // 0→2 crosses x+ of nodes 0 and 1; 1→2 crosses x+ of node 1: both at
    // 0.25 B/ps, 4 MB-times. Alone, 0→2 takes 2.
    let pl = || platform(Topology::Torus { dims: [4, 1, 1] }, flow(0.5, 1.0, Routing::DimensionOrder));
    assert_eq!(makespan(pl(), exchange(4, &[(0, 2), (1, 2)])), 4 * (S - 1) + L);
    assert_eq!(makespan(pl(), exchange(4, &[(0, 2)])), 2 * (S - 1) + L);
    // 0→1 and 2→3 share nothing
    assert_eq!(makespan(pl(), exchange(4, &[(0, 1), (2, 3)])), 2 * (S - 1) + L);
}

#[test]
fn a_dragonflys_global_link_limits_minimal_routing_and_valiant_spreads_it() {
    // 5 groups of 4 nodes; group 0's nodes each send to one of group 1's.
    // Global links at 1 B/ps, like the NICs.
    let topology = Topology::Dragonfly { nodes_per_router: 1, routers_per_group: 4 };
    let pairs: Vec<(u32, u32)> = (0..4).map(|a| (a, a + 4)).collect();
    let time = |routing| makespan(platform(topology.clone(), flow(1.0, 1.0, routing)), exchange(20, &pairs));
    // minimal: the four share the one global link 0→1
    let minimal = time(Routing::Minimal);
    assert_eq!(minimal, 4 * (S - 1) + L);
    // Valiant: flows through the same intermediate group share both its links;
    // the busiest intermediate sets the end (routes recomputed as the engine draws them)
    let routes = Routes::new(flow(1.0, 1.0, Routing::Valiant), &topology, 20, 20, 1.0, 0.0, 0);
    let mut through = [0u64; 5];
    for &(a, b) in &pairs {
        let mut v = Vec::new();
        routes.route((a, b), (a, b), crate::rng::hash(a as u64, b as u64, 0, S), |_| 0, |s| v.push(s));
        through[(v[1] - 20) % 5] += 1; // the first global link's far end (after the NIC in)
    }
    let busiest = *through.iter().max().unwrap();
    assert!(busiest < 4);
    assert_eq!(time(Routing::Valiant), busiest * (S - 1) + L, "{through:?}");
    // UGAL: the first takes the minimal route, later ones detour while it is busy
    let ugal = time(Routing::Ugal);
    assert!(ugal < minimal, "{ugal} vs {minimal}");
}

#[test]
fn where_no_link_is_shared_flows_change_nothing() {
    // A ring exchange and a ping-pong on a fat tree with wide links, eager and
    // rendezvous, O = 0: every message alone on its links ends as in LogGOPSim.
    for s_bytes in [u64::MAX >> 20, 1000] {
        let mut pl = platform(Topology::FatTree { radix: 8 }, flow(4.0, 1.0, Routing::DModK));
        pl.inter_node.eager.s_bytes = s_bytes;
        pl.inter_node.eager.o_ps = 300_000;
        pl.inter_node.eager.g_ps = 50_000;
        let ring: Vec<(u32, u32)> = (0..32).map(|a| (a, (a + 5) % 32)).collect();
        let none = Platform { links: LinkModel::default(), ..pl.clone() };
        let (a, b) = (run(pl.clone(), exchange(32, &ring)), run(none.clone(), exchange(32, &ring)));
        assert_eq!((0..32).map(|r| a.finish_time(r)).collect::<Vec<_>>(), (0..32).map(|r| b.finish_time(r)).collect::<Vec<_>>());
        let (stats, delay, flowed) = a.shared_links().unwrap();
        assert_eq!((delay, flowed), (0.0, 32));
        let nic = stats.iter().find(|c| c.class == "nic_in").unwrap();
        assert_eq!((nic.bytes, nic.peak_flows), (32 * (S - 1), 1));
    }
}

/// The run explained: its critical path, and the names of the links its route names.
fn explained(pl: Platform, ops: Vec<Vec<StreamOp>>) -> (crate::probes::explain::Explained, Time) {
    use crate::probes::explain::Explain;
    let net = Network { ranks_per_node: pl.ranks_per_node, ..Network::uniform(pl.inter_node.eager) };
    let net = Network { platform: Some(Box::new(pl)), ..net };
    let program = StreamProgram::new(Script { ranks: ops, ..Default::default() }, Recorder::disabled());
    let mut e = Engine::with_probe(program, net, Noise::none(), Explain::default()).unwrap();
    e.run().unwrap();
    let makespan = (0..e.num_ranks()).map(|r| e.finish_time(r)).max().unwrap();
    let mut x = e.findings().explained.expect("explained");
    let slots: Vec<u32> = x.route.iter().filter_map(|s| s.link.map(|l| l.0)).collect();
    x.link_names = slots.into_iter().map(|s| (s, e.link_name(s).unwrap())).collect();
    (x, makespan)
}

#[test]
fn explain_lays_a_shared_links_time_on_that_link_and_counts_its_bandwidth() {
    use crate::probes::explain::{NIC, PENALTY, WIRE};
    // n senders to rank 0: each flow at 1/n of its NIC in, all end at n MB.
    // The path: L on the wire, (s − 1)·G the NIC's, the rest rank 0's NIC
    // in, named; dT/dG is n(s − 1): that link's bandwidth is 1/G too.
    for n in [1u32, 2, 5] {
        let pairs: Vec<(u32, u32)> = (1..=n).map(|a| (a, 0)).collect();
        let pl = platform(Topology::FullyConnected, flow(0.0, 1.0, Routing::DimensionOrder));
        let (x, makespan) = explained(pl, exchange(n + 1, &pairs));
        assert_eq!(x.path.total(), makespan, "n={n}");
        assert_eq!((x.path.ps[WIRE], x.path.ps[NIC], x.path.ps[PENALTY]), (L, S - 1, (n as Time - 1) * (S - 1)), "n={n}");
        assert_eq!(x.path.count(crate::probes::explain::PARAMS.iter().position(|&p| p == "G").unwrap()), n as u64 * (S - 1));
        let last = x.route.last().unwrap();
        assert_eq!(last.rank, 0);
        if n == 1 {
            assert_eq!(last.link, None, "alone at its NIC's pace: no link to name");
        } else {
            let (slot, ps) = last.link.expect("the arrival waited on a link");
            assert_eq!(ps, (n as Time - 1) * (S - 1));
            assert_eq!(x.link_names, vec![(slot, "nic_in of rank 0".to_string())]);
        }
    }
}

#[test]
fn a_tapered_uplink_is_named_and_its_time_is_not_gs() {
    use crate::probes::explain::{NIC, PENALTY};
    // radix 4 (2 nodes per leaf), taper 4: up-links at 1/4 B/ps. Rank 0 sends
    // to rank 2 (another leaf): alone at 1/4, 4 MB; the NIC's share is 1 MB,
    // the uplink's 3 MB; G does not move it (the link sets its pace).
    let pl = platform(Topology::FatTree { radix: 4 }, flow(1.0, 4.0, Routing::DModK));
    let (x, makespan) = explained(pl, exchange(4, &[(0, 2)]));
    assert_eq!(makespan, 4 * (S - 1) + L);
    assert_eq!((x.path.ps[NIC], x.path.ps[PENALTY]), (S - 1, 3 * (S - 1)));
    assert_eq!(x.path.count(crate::probes::explain::PARAMS.iter().position(|&p| p == "G").unwrap()), 0);
    let (_, ps) = x.route.last().unwrap().link.expect("named");
    assert_eq!(ps, 3 * (S - 1));
    assert!(x.link_names[0].1.starts_with("up_1 #"), "{:?}", x.link_names);
}

#[test]
fn the_time_links_cost_is_laid_on_links_in_full() {
    // a shift across a 4:1 tapered tree and an incast beside it: what the
    // links cost each flow (summed over flows) is what they cost per link
    let pl = platform(Topology::FatTree { radix: 4 }, flow(1.0, 4.0, Routing::Random));
    let pairs: Vec<(u32, u32)> = (0..8).map(|a| (a, (a + 2) % 8)).chain([(1, 4), (3, 4), (6, 4)]).collect();
    let e = run(pl, exchange(8, &pairs));
    let (links, total) = e.links_held_back(None, usize::MAX).unwrap();
    assert!(total > 0.0);
    let per_link: f64 = links.iter().map(|h| h.ps).sum();
    assert!((per_link - total).abs() <= 1e-6 * total + links.len() as f64, "{per_link} vs {total}");
    assert!(links.windows(2).all(|w| w[0].ps >= w[1].ps), "largest first");
}

#[test]
fn link_counters_follow_the_flows_on_each_class() {
    // n senders to rank 0 (radix 4: ranks 1..n on other leaves than 0 for n ≥ 2):
    // rank 0's NIC in carries n flows at once on one busy link, then none
    let n = 5u32;
    let pairs: Vec<(u32, u32)> = (1..=n).map(|a| (a, 0)).collect();
    let pl = platform(Topology::FatTree { radix: 4 }, flow(1.0, 1.0, Routing::DModK));
    let net = Network { ranks_per_node: pl.ranks_per_node, ..Network::uniform(pl.inter_node.eager) };
    let net = Network { platform: Some(Box::new(pl)), ..net };
    let program = StreamProgram::new(Script { ranks: exchange(n + 1, &pairs), ..Default::default() }, Recorder::disabled());
    let mut e = Engine::new(program, net, Noise::none()).unwrap();
    e.record_link_counters(1 << 20);
    e.run().unwrap();
    let c = e.take_link_counters().expect("recorded");
    let nic = c.classes.iter().position(|k| k == "nic_in").unwrap() as u8;
    let of = |class: u8| c.samples.iter().filter(move |s| s.class == class);
    assert_eq!(of(nic).map(|s| (s.flows, s.busy)).max(), Some((n, 1)));
    for k in 0..c.classes.len() as u8 {
        let last = of(k).next_back().expect("every class of this route was used");
        assert_eq!((last.flows, last.busy), (0, 0), "{}: all flows ended", c.classes[k as usize]);
        assert!(of(k).all(|s| s.busy <= s.flows));
    }
    assert!(c.samples.windows(2).all(|w| w[0].t <= w[1].t), "in time order");
    assert!(!c.truncated);
}

#[test]
fn a_send_waiting_for_its_dma_nic_holds_no_link_until_it_leaves() {
    // Rank 0 sends to 1, then to 2. A DMA NIC sends the second message when
    // the first has left, (s − 1)·G later; its flow must begin then. Begun
    // as the send was handled, it ran beside the first (the sending side is
    // not a shared link, each flow is capped at 1/G on its own) and rank 2
    // had its bytes (s − 1)·G early; rank 3 sends to 2 as well, so rank 2's
    // NIC takes rank 3's bytes alone first, then rank 0's.
    let pairs = [(0, 1), (0, 2), (3, 2)];
    let finish = |links: LinkModel| {
        let pl = platform(Topology::FullyConnected, links);
        let net = Network { ranks_per_node: 1, nic_model: NicModel::Dma, ..Network::uniform(pl.inter_node.eager) };
        let net = Network { platform: Some(Box::new(pl)), ..net };
        let program = StreamProgram::new(Script { ranks: exchange(4, &pairs), ..Default::default() }, Recorder::disabled());
        let mut e = Engine::new(program, net, Noise::none()).unwrap();
        e.run().unwrap();
        (0..4).map(|r| e.finish_time(r)).collect::<Vec<_>>()
    };
    let none = finish(LinkModel::default());
    assert_eq!(&none[1..3], &[S - 1 + L, 2 * (S - 1) + L]);
    assert_eq!(finish(flow(0.0, 1.0, Routing::DimensionOrder)), none);
}

#[test]
fn a_flows_receiver_is_charged_as_a_dma_nics() {
    // Documented (links.md): a flowed message's receiver pays o + (s − 1)·O
    // after the last byte, its CPU free while the bytes come in, as a DMA
    // NIC's. A ±1 halo on wide links therefore gives what "none" gives with
    // a DMA NIC, and less than LogGOPSim's receiver, whose CPU is busy for
    // (s − 1)·G from the first byte and holds back the rank's second send.
    let mut pl = platform(Topology::FatTree { radix: 8 }, flow(1e9, 1.0, Routing::DModK));
    (pl.inter_node.eager.o_ps, pl.inter_node.eager.g_ps) = (300_000, 50_000);
    let halo: Vec<(u32, u32)> = (0..8).flat_map(|a| [(a, (a + 1) % 8), (a, (a + 7) % 8)]).collect();
    let finish = |links: LinkModel, nic_model: NicModel| {
        let pl = Platform { links, ..pl.clone() };
        let net = Network { ranks_per_node: 1, nic_model, ..Network::uniform(pl.inter_node.eager) };
        let net = Network { platform: Some(Box::new(pl)), ..net };
        let program = StreamProgram::new(Script { ranks: exchange(8, &halo), ..Default::default() }, Recorder::disabled());
        let mut e = Engine::new(program, net, Noise::none()).unwrap();
        e.run().unwrap();
        (0..8).map(|r| e.finish_time(r)).max().unwrap()
    };
    let flows = finish(pl.links, NicModel::Loggopsim);
    assert_eq!(flows, finish(LinkModel::default(), NicModel::Dma));
    assert!(flows < finish(LinkModel::default(), NicModel::Loggopsim));
}

//! The replay's time inside MPI attributed to the traced calls, to set
//! beside what each call took in the traced run (`idlewave validate`).
//!
//! A rank's replay alternates computations (one Calc op per traced gap
//! between calls) and MPI: the replayed time from the end of computation
//! k − 1 to the start of computation k belongs to the calls traced between
//! those two gaps. Where several calls share that stretch (an Isend, an
//! Irecv and their Waitall with no computation between them), it is shared
//! in proportion to their traced times, equally when those are all zero.
//! Time in a stretch with no modelled call (only calls replayed at no cost)
//! goes to its own row, so that the rows add up to the replay's time in MPI.

use super::convert::CallSeg;
use super::format;
use crate::probes::timeline::{Activity, Span};
use crate::time::{to_seconds, Time};

/// One row of the table: a kind of call over every rank.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CallRow {
    pub call: String,
    pub calls: u64,
    pub bytes: u64,
    pub traced_s: f64,
    pub replayed_s: f64,
}

/// The row of replayed time that no modelled call was traced in.
pub const NO_CALL: &str = "(no modelled call: messages handled between computations)";

/// The MPI function(s) a record kind stands for.
fn label(op: u16) -> String {
    let name = format::op_name(op);
    match name.as_str() {
        "wait" => "MPI_Wait (all, any, some)".into(),
        "test" => "MPI_Test (completing; all, any, some)".into(),
        "sendrecv_send" => "MPI_Sendrecv".into(),
        "start" => "MPI_Start (all)".into(),
        _ => {
            let mut c = name.chars();
            c.next().map_or(String::new(), |f| format!("MPI_{}{}", f.to_uppercase(), c.as_str()))
        }
    }
}

/// The rows, by call kind, largest |replayed − traced| first. `calls[r]`:
/// rank r's modelled call records in trace order; `spans`: the replay's
/// timeline (its Compute spans are rank r's computations in order, one per
/// Calc op); `finish[r]`: when rank r ended.
pub fn by_call(calls: &[&[CallSeg]], calcs: &[u32], spans: &[Span], finish: &[Time]) -> Result<Vec<CallRow>, String> {
    let mut computations: Vec<Vec<(Time, Time)>> = vec![Vec::new(); calls.len()];
    for s in spans.iter().filter(|s| s.activity == Activity::Compute) {
        computations[s.rank as usize].push((s.start, s.end));
    }
    let mut rows: std::collections::BTreeMap<String, CallRow> = std::collections::BTreeMap::new();
    for (rank, (records, comp)) in calls.iter().zip(&computations).enumerate() {
        if comp.len() != calcs[rank] as usize {
            return Err(format!(
                "rank {rank}: {} computations replayed where the trace gave {} (the timeline was cut short)",
                comp.len(),
                calcs[rank]
            ));
        }
        let mut at = 0;
        for segment in 0..=comp.len() {
            let lo = if segment == 0 { 0 } else { comp[segment - 1].1 };
            let hi = comp.get(segment).map_or(finish[rank], |c| c.0);
            let replayed = to_seconds(hi.saturating_sub(lo));
            let first = at;
            while at < records.len() && records[at].segment as usize == segment {
                at += 1;
            }
            let here = &records[first..at];
            if here.is_empty() {
                if replayed > 0.0 {
                    rows.entry(NO_CALL.into()).or_insert_with(|| CallRow { call: NO_CALL.into(), ..Default::default() }).replayed_s +=
                        replayed;
                }
                continue;
            }
            let traced: f64 = here.iter().map(|c| c.traced_s).sum();
            let firsts = here.iter().filter(|c| c.first_record).count().max(1) as f64;
            for c in here {
                let call = label(c.op);
                let row = rows.entry(call.clone()).or_insert_with(|| CallRow { call, ..Default::default() });
                row.bytes += c.bytes;
                if c.first_record {
                    row.calls += 1;
                    row.traced_s += c.traced_s;
                    row.replayed_s += replayed * if traced > 0.0 { c.traced_s / traced } else { 1.0 / firsts };
                }
            }
        }
    }
    let mut rows: Vec<CallRow> = rows.into_values().collect();
    rows.sort_by(|a, b| (b.replayed_s - b.traced_s).abs().total_cmp(&(a.replayed_s - a.traced_s).abs()).then(a.call.cmp(&b.call)));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(segment: u32, op: u16, traced_s: f64, first_record: bool) -> CallSeg {
        CallSeg { segment, op, bytes: 8, traced_s, first_record }
    }

    fn compute(rank: u32, start: Time, end: Time) -> Span {
        Span { rank, peer: 0, start, end, activity: Activity::Compute, tag: 0, bytes: 0 }
    }

    #[test]
    fn stretches_between_computations_go_to_their_calls_in_proportion() {
        use format::op;
        // rank 0: computation [0, 10) ps, then isend (traced 1 s) + wait (3 s) until the
        // next computation at 50, then a send until the end at 70
        let calls = [seg(1, op::ISEND, 1.0, true), seg(1, op::WAIT, 3.0, true), seg(1, op::WAIT, 0.0, false), seg(2, op::SEND, 2.0, true)];
        let spans = [compute(0, 0, 10), compute(0, 50, 60)];
        let rows = by_call(&[&calls], &[2], &spans, &[70]).unwrap();
        let get = |name: &str| rows.iter().find(|r| r.call.starts_with(name)).unwrap().clone();
        assert_eq!(get("MPI_Isend").replayed_s, to_seconds(10));
        assert_eq!(get("MPI_Wait").replayed_s, to_seconds(30));
        assert_eq!(get("MPI_Wait").calls, 1); // two records, one call
        assert_eq!(get("MPI_Wait").bytes, 16);
        assert_eq!(get("MPI_Send").replayed_s, to_seconds(10));
        // conservation: the rows add up to the time outside computation
        let total: f64 = rows.iter().map(|r| r.replayed_s).sum();
        assert!((total - to_seconds(70 - 20)).abs() < 1e-24);
    }

    #[test]
    fn a_stretch_without_calls_and_a_short_timeline() {
        let spans = [compute(0, 5, 10), compute(0, 20, 30)];
        let rows = by_call(&[&[]], &[2], &spans, &[30]).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].call, NO_CALL);
        assert_eq!(rows[0].replayed_s, to_seconds(15));
        assert!(by_call(&[&[]], &[3], &spans, &[30]).is_err());
    }
}

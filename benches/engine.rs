//! `cargo bench`: the same cases as `idlewave bench`, one JSON line each.
//! Pass case names as arguments to run a subset.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let cases: Vec<&str> = if args.is_empty() { idlewave::bench::CASES.to_vec() } else { args.iter().map(|s| s.as_str()).collect() };
    for case in cases {
        match idlewave::bench::run_case(case) {
            Ok(r) => {
                let extra: String = r.extra.iter().map(|(k, v)| format!(", \"{k}\": {v:.0}")).collect();
                println!(
                    "{{\"case\": \"{}\", \"ranks\": {}, \"events\": {}, \"wall_s\": {:.3}, \"events_per_s\": {:.0}, \"bytes_per_rank\": {:.1}{extra}}}",
                    r.case, r.ranks, r.events, r.wall_s, r.events_per_s, r.bytes_per_rank
                )
            }
            Err(e) => {
                eprintln!("{case}: {e}");
                std::process::exit(1);
            }
        }
    }
}

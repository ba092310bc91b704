//! Synthetic traces for benchmarks and tests, written as the tracer writes them.

use super::format::Coll;
use super::grid::Grid;
use std::path::Path;

/// A synthetic trace for benchmarks and tests: `ranks` ranks in a ring, each
/// iteration an Irecv/Isend pair, a Waitall (two completions), a run of
/// failed polls and an Allreduce — 6 records per iteration.
pub fn write_synthetic(dir: &Path, ranks: u32, iterations: u64) -> std::io::Result<()> {
    use super::format::{op, Footer, Record, Writer};
    std::fs::create_dir_all(dir)?;
    for r in 0..ranks {
        let mut w = Writer::create(&dir.join(format!("rank-{r}.iwt")), r as i32, ranks as i32)?;
        let mut t = 0.0f64;
        let mut rec = |w: &mut Writer, op: u16, peer: i32, tag: i32, bytes: u64, req: u64, dt: f64| {
            let x = Record { op, flags: 0, comm: 0, peer, tag, bytes, req, t0: t, t1: t + dt };
            t += dt + 1e-6;
            w.record(&x, &[])
        };
        rec(&mut w, op::INIT, -1, 0, 0, 0, 0.0)?;
        let (left, right) = (((r + ranks - 1) % ranks) as i32, ((r + 1) % ranks) as i32);
        for _ in 0..iterations {
            rec(&mut w, op::IRECV, left, 5, 4096, 1, 1e-7)?;
            rec(&mut w, op::ISEND, right, 5, 4096, 2, 1e-7)?;
            rec(&mut w, op::POLL, -1, 0, 10, 1, 2e-6)?;
            rec(&mut w, op::WAIT, left, 5, 0, 1, 1e-6)?;
            rec(&mut w, op::WAIT, -1, 0, 0, 2, 0.0)?;
            rec(&mut w, op::COLL_BASE + Coll::Allreduce as u16, -1, 0, 8, 0, 5e-6)?;
        }
        rec(&mut w, op::FINALIZE, -1, 0, 0, 0, 0.0)?;
        let names = vec![("MPI_Irecv".into(), iterations, 0.0), ("MPI_Isend".into(), iterations, 0.0)];
        w.finish(&Footer { library: "synthetic".into(), functions: names, tracer_s: None })?;
    }
    Ok(())
}

/// Writes a synthetic trace of a 5-point halo exchange on a 3×3
/// non-periodic MPI_Cart_create grid: `iterations` of 100 µs of computation, then
/// Irecv/Isend of 8 KiB with each neighbour and a Waitall, then an
/// allreduce of 8 B along each row (MPI_Cart_sub). The template of the
/// grid-extrapolation benchmark.
pub fn write_synthetic_grid(dir: &Path, iterations: u64) -> std::io::Result<()> {
    write_synthetic_cart(dir, &[3, 3], &[false, false], iterations)
}

/// The same program on any MPI_Cart_create grid: a halo with the two
/// neighbours along each dimension (none where that is the rank itself,
/// as along a periodic dimension of one rank), then an allreduce along the
/// last dimension.
pub fn write_synthetic_cart(dir: &Path, dims: &[u32], periodic: &[bool], iterations: u64) -> std::io::Result<()> {
    cart_program(dir, dims, periodic, iterations, false)
}

/// A 3-D code as `tests/programs/grid3d_scaling.c` is, on a 3×3×3 periodic
/// grid: each iteration the halo with 6 neighbours, then along its row (the
/// last dimension, MPI_Cart_sub) a broadcast of 4.5 KiB from the row's last
/// rank and an allgatherv whose counts follow the row position (8·(64 + i)
/// bytes), then a reduce to the last world rank and an allreduce. The
/// template of the 3-D extrapolation benchmark.
pub fn write_synthetic_grid3d(dir: &Path, iterations: u64) -> std::io::Result<()> {
    cart_program(dir, &[3, 3, 3], &[true; 3], iterations, true)
}

/// `write_synthetic_cart`'s program; with `rooted`, the row's and the
/// world's rooted and v-collectives of `write_synthetic_grid3d` each iteration.
pub(super) fn cart_program(dir: &Path, dims: &[u32], periodic: &[bool], iterations: u64, rooted: bool) -> std::io::Result<()> {
    use super::format::{op, Footer, Record, Writer};
    std::fs::create_dir_all(dir)?;
    let g = Grid::new(dims.to_vec(), periodic.to_vec()).map_err(std::io::Error::other)?;
    let (size, last) = (g.size(), dims.len() - 1);
    let cart: Vec<u64> =
        std::iter::once(dims.len() as u64).chain(dims.iter().map(|&d| d as u64)).chain(periodic.iter().map(|&p| p as u64)).collect();
    for r in 0..size {
        let mut w = Writer::create(&dir.join(format!("rank-{r}.iwt")), r as i32, size as i32)?;
        let mut t = 0.0f64;
        // a communicator's member records take no time, as the tracer writes
        // them (so the program's times do not depend on the grid's size)
        let mut rec = |w: &mut Writer, op: u16, comm: u32, peer: i32, tag: i32, bytes: u64, req: u64, gap: f64, payload: &[u64]| {
            t += gap;
            let took = if op == op::COMM_MEMBER { 0.0 } else { 1e-7 };
            let x = Record { op, flags: 0, comm, peer, tag, bytes, req, t0: t, t1: t + took };
            t += took;
            w.record(&x, payload)
        };
        rec(&mut w, op::INIT, 0, -1, 0, 0, 0, 0.0, &[])?;
        rec(&mut w, op::COMM_NEW, 0, 1, 7, 0, 0, 1e-6, &cart)?;
        for m in 0..size as i32 {
            rec(&mut w, op::COMM_MEMBER, 1, m, m, 0, 0, 0.0, &[])?;
        }
        let c = g.coords(r);
        let row: Vec<u32> = (0..dims[last])
            .map(|x| {
                let mut m = c;
                m[last] = x;
                g.rank(&m)
            })
            .collect();
        rec(&mut w, op::COMM_NEW, 1, 2, 8, 0, 0, 1e-6, &[])?;
        for (i, &m) in row.iter().enumerate() {
            rec(&mut w, op::COMM_MEMBER, 2, m as i32, i as i32, 0, 0, 0.0, &[])?;
        }
        let neighbours: Vec<u32> = (0..dims.len())
            .flat_map(|d| [(d, -1i64), (d, 1)])
            .filter_map(|(d, s)| {
                let n = dims[d] as i64;
                let x = c[d] as i64 + s;
                let x = if periodic[d] { x.rem_euclid(n) } else { x };
                ((0..n).contains(&x) && x != c[d] as i64).then(|| {
                    let mut m = c;
                    m[d] = x as u32;
                    g.rank(&m)
                })
            })
            .collect();
        for _ in 0..iterations {
            let mut req = 0;
            for (i, &n) in neighbours.iter().enumerate() {
                req += 1;
                let gap = if i == 0 { 100e-6 } else { 1e-7 }; // the computation before the exchange
                rec(&mut w, op::IRECV, 1, n as i32, 0, 8192, req, gap, &[])?;
                req += 1;
                rec(&mut w, op::ISEND, 1, n as i32, 0, 8192, req, 1e-7, &[])?;
            }
            for q in 1..=req {
                rec(&mut w, op::WAIT, 1, -1, 0, 0, q, 0.0, &[])?;
            }
            if rooted {
                let counts: Vec<u64> = (0..row.len() as u64).map(|i| 8 * (64 + i)).collect();
                let me = c[last] as usize;
                rec(&mut w, op::COLL_BASE + Coll::Bcast as u16, 2, row[row.len() - 1] as i32, 0, 4608, 0, 1e-6, &[])?;
                rec(&mut w, op::COLL_BASE + Coll::Allgatherv as u16, 2, -1, 0, counts[me], 0, 1e-6, &counts)?;
                rec(&mut w, op::COLL_BASE + Coll::Reduce as u16, 0, size as i32 - 1, 0, 8, 0, 1e-6, &[])?;
                rec(&mut w, op::COLL_BASE + Coll::Allreduce as u16, 0, -1, 0, 8, 0, 1e-6, &[])?;
            }
        }
        rec(&mut w, op::COLL_BASE + Coll::Allreduce as u16, 2, -1, 0, 8, 0, 1e-6, &[])?;
        rec(&mut w, op::FINALIZE, 0, -1, 0, 0, 0, 1e-6, &[])?;
        w.finish(&Footer { library: "synthetic".into(), functions: vec![], tracer_s: None })?;
    }
    Ok(())
}

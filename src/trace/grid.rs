//! Extrapolation of a code on a Cartesian process grid (docs/how-to/extrapolate.md, "Your code
//! at scale"; docs/engine-semantics.md). A trace on a grid of at least 3 ranks per dimension is
//! a template of rank classes: per dimension a rank sits on the low edge, in
//! the interior or on the high edge (periodic dimensions keep the same
//! rule, so rank 0's extra duties stay on rank 0). A periodic dimension of 2
//! traced ranks grows to an even size as pairs: the two ranks' exchanges
//! are repeated by every pair of neighbours (0 and 1, 2 and 3, …). Each rank of the larger
//! grid replays the template rank of its class, with its neighbours moved
//! by the same grid offsets, its sub-communicators (rows, columns, planes,
//! the whole grid) rebuilt on the larger grid, and, for strong scaling,
//! neighbour messages scaled with the surface and computation with the
//! volume of its subdomain.

use super::format::{self, op, Record};

pub const MAX_DIMS: usize = 3;

/// A process grid in MPI's row-major rank order (the last dimension varies fastest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    pub dims: Vec<u32>,
    pub periodic: Vec<bool>,
}

pub type Coords = [u32; MAX_DIMS];

/// Why a grid cannot be made, or a record does not fit the extrapolation;
/// grids are named as described ("4×4 (periodic)") when the error is made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GridError {
    #[error("a process grid has 1 to {MAX_DIMS} dimensions of at least 1 rank, got {dims:?}")]
    Shape { dims: Vec<u32> },
    #[error("a grid of {grid} ranks is more than this simulator's 2^32")]
    TooLarge { grid: String },
    #[error("grid '{text}': expected 1 to {MAX_DIMS} positive sizes joined by 'x', e.g. 64x64")]
    Parse { text: String },
    /// The target MPI_Dims_create makes grows dimension `dim` of fewer than 3 traced ranks.
    #[error("at {ranks} ranks the program's grid would be MPI_Dims_create's {target} (as {traced} is at {traced_ranks}): dimension {dim} grows from {from} to {to} ranks, and with {from} traced rank{} it has no interior to repeat{}. Trace with at least 3 ranks along every dimension that grows (MPI_Dims_create gives that from {cube} ranks; with more ranks than cores, trace with IDLEWAVE_TRACE_CLOCK=cpu), or give --grid if the program keeps that dimension's size", if *from == 1 { "" } else { "s" }, if *pairs { " (periodic with 2 ranks, it grows in pairs: to even sizes)" } else { "" })]
    NoInteriorToGrow {
        ranks: u32,
        target: String,
        traced: String,
        traced_ranks: u32,
        dim: usize,
        from: u32,
        to: u32,
        cube: u32,
        pairs: bool,
    },
    #[error("every dimension of the traced grid {grid} has fewer than 3 ranks, so none has an interior to repeat: trace at least 3 ranks along one")]
    AllDimensionsSmall { grid: String },
    #[error("the traced grid {grid} keeps the size of its dimensions of fewer than 3 ranks, so it extrapolates to multiples of {kept} ranks, not to {ranks}")]
    NotAMultiple { grid: String, kept: u32, ranks: u32 },
    #[error("the traced grid is {dims}-dimensional ({traced}), the target {target} is not")]
    Dimensions { dims: usize, traced: String, target: String },
    #[error("dimension {dim} of the traced grid {traced} has {ranks} rank{}, no interior to repeat: it keeps its size in the target, which has {target_ranks} (trace at least 3 ranks along it to grow it{})", if *ranks == 1 { "" } else { "s" }, if *ranks == 2 { "; only a periodic dimension grows from 2" } else { "" })]
    KeepsSize { dim: usize, traced: String, ranks: u32, target_ranks: u32 },
    #[error("dimension {dim} of the traced grid {traced} has 2 ranks, periodic: at scale its ranks exchange as pairs of neighbours, so it grows to an even number of ranks, not {target_ranks} (trace at least 3 ranks along it for other sizes)")]
    OddPairs { dim: usize, traced: String, target_ranks: u32 },
    #[error("the target grid {target} needs at least 3 ranks along dimension {dim}, as the traced grid has")]
    TargetTooSmall { target: String, dim: usize },
    #[error("its peer, rank {peer}, is {distance} ranks away along dimension {dim} of the {grid} grid: only nearest neighbours (±1 per dimension, diagonals included) extrapolate")]
    NotNearest { peer: u32, distance: i64, dim: usize, grid: String },
    #[error("its peer falls outside the {grid} grid")]
    PeerOutside { grid: String },
    #[error("member {member} is not a rank of the {grid} grid")]
    MemberOutside { member: u32, grid: String },
    /// `first`: up to 8 of the members; `varies`: the dimensions they vary along.
    #[error("a communicator of {members} members {first:?} is not a row, column, plane or the whole of the {grid} grid in grid order (it varies along dimensions [{varies}])")]
    NotASubGrid { members: usize, first: Vec<u32>, grid: String, varies: String },
    #[error("root {root} is not a rank of the {grid} grid")]
    RootOutside { root: u32, grid: String },
    #[error(
        "its root sits at coordinate {at} of {of} along dimension {dim}, inside the grid: an interior root has no place on the larger grid"
    )]
    InteriorRoot { at: u32, of: u32, dim: usize },
    #[error("MPI_Cart_create record with a malformed payload")]
    CartPayload,
    #[error("MPI_Cart_create record with a dimension of more than 2^32 ranks")]
    CartTooLarge,
    #[error("its point-to-point peers fit no 2-D or 3-D grid of at least 3 ranks per dimension as nearest neighbours")]
    NoneFits,
    #[error("its point-to-point peers fit several grids equally ({a} and {b}): create the grid with MPI_Cart_create so that the tracer records it")]
    Ambiguous { a: String, b: String },
}

impl Grid {
    pub fn new(dims: Vec<u32>, periodic: Vec<bool>) -> Result<Self, GridError> {
        if dims.is_empty() || dims.len() > MAX_DIMS || periodic.len() != dims.len() || dims.contains(&0) {
            return Err(GridError::Shape { dims });
        }
        if dims.iter().map(|&d| d as u64).product::<u64>() > u32::MAX as u64 {
            return Err(GridError::TooLarge { grid: describe_dims(&dims) });
        }
        Ok(Grid { dims, periodic })
    }

    pub fn size(&self) -> u32 {
        self.dims.iter().product()
    }

    pub fn coords(&self, mut rank: u32) -> Coords {
        let mut c = [0; MAX_DIMS];
        for d in (0..self.dims.len()).rev() {
            c[d] = rank % self.dims[d];
            rank /= self.dims[d];
        }
        c
    }

    pub fn rank(&self, c: &Coords) -> u32 {
        self.dims.iter().zip(c).fold(0, |r, (&n, &x)| r * n + x)
    }

    /// Stride of dimension `d` in rank numbers.
    pub fn stride(&self, d: usize) -> u32 {
        self.dims[d + 1..].iter().product()
    }

    /// The offset from `a` to `b` along `d`, the shortest way round if periodic.
    pub fn offset(&self, d: usize, a: u32, b: u32) -> i64 {
        let (n, diff) = (self.dims[d] as i64, b as i64 - a as i64);
        // (around a periodic dimension of 2 ranks either way reaches the
        // other rank: read it straight, so that the two ranks' offsets are
        // opposite, as their neighbours' are on the kept dimension at scale)
        if self.periodic[d] && n > 2 {
            let m = diff.rem_euclid(n);
            if m > n / 2 {
                m - n
            } else {
                m
            }
        } else {
            diff
        }
    }

    pub fn describe(&self) -> String {
        let along: Vec<String> = (0..self.dims.len()).filter(|&d| self.periodic[d]).map(|d| d.to_string()).collect();
        let p = match along.len() {
            0 => "non-periodic".to_string(),
            n if n == self.dims.len() => "periodic".to_string(),
            _ => format!("periodic along dimension {}", along.join(", ")),
        };
        format!("{} ({p})", describe_dims(&self.dims))
    }
}

pub fn describe_dims(dims: &[u32]) -> String {
    dims.iter().map(u32::to_string).collect::<Vec<_>>().join("×")
}

/// MPI_Dims_create's balanced grid: the prime factors of `n` dealt, largest
/// first, to the dimension with the smallest product; sizes non-increasing.
pub fn dims_create(mut n: u32, ndims: usize) -> Vec<u32> {
    let mut primes = Vec::new();
    let mut f = 2;
    while f * f <= n {
        while n.is_multiple_of(f) {
            primes.push(f);
            n /= f;
        }
        f += 1;
    }
    if n > 1 {
        primes.push(n);
    }
    let mut dims = vec![1u32; ndims];
    for &p in primes.iter().rev() {
        let smallest = (0..ndims).min_by_key(|&d| (dims[d], d)).unwrap();
        dims[smallest] *= p;
    }
    dims.sort_unstable_by(|a, b| b.cmp(a));
    dims
}

/// MPI_Dims_create(n, dims) with the nonzero entries of `fixed` kept: the
/// others, in order, take dims_create of what is left (None if the fixed
/// sizes do not divide `n`).
pub fn dims_create_fixed(n: u32, fixed: &[u32]) -> Option<Vec<u32>> {
    let kept: u32 = fixed.iter().filter(|&&d| d != 0).product();
    let free = fixed.iter().filter(|&&d| d == 0).count();
    if !n.is_multiple_of(kept) || (free == 0 && n != kept) {
        return None;
    }
    let mut spread = dims_create(n / kept, free).into_iter();
    Some(fixed.iter().map(|&d| if d == 0 { spread.next().unwrap_or(1) } else { d }).collect())
}

/// The grid the program makes on `ranks` ranks, as far as the trace tells,
/// and how it was chosen. A traced grid that is MPI_Dims_create's for the
/// traced size (in some order of its dimensions) is taken to be made by it:
/// the target is MPI_Dims_create's for `ranks`, dealt to the dimensions in
/// the same order of size; a dimension it grows must have an interior in
/// the trace. Another traced grid keeps its dimensions of fewer than 3 ranks
/// and spreads the rest over the others (the description says so).
pub fn target_dims(g: &Grid, ranks: u32) -> Result<(Vec<u32>, &'static str), GridError> {
    let n = g.dims.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| g.dims[b].cmp(&g.dims[a]));
    let sorted: Vec<u32> = order.iter().map(|&d| g.dims[d]).collect();
    if sorted == dims_create(g.size(), n) {
        let mut target = vec![0; n];
        for (&d, big) in order.iter().zip(dims_create(ranks, n)) {
            target[d] = big;
        }
        let pairs = |d: usize| grows_in_pairs(g, d) && target[d].is_multiple_of(2);
        if let Some(d) = (0..n).find(|&d| g.dims[d] < 3 && target[d] != g.dims[d] && !pairs(d)) {
            let cube = 3u32.pow(n as u32);
            return Err(GridError::NoInteriorToGrow {
                ranks,
                target: describe_dims(&target),
                traced: describe_dims(&g.dims),
                traced_ranks: g.size(),
                dim: d,
                from: g.dims[d],
                to: target[d],
                cube,
                pairs: grows_in_pairs(g, d),
            });
        }
        return Ok((target, "MPI_Dims_create's, as the traced grid is"));
    }
    // dimensions of fewer than 3 ranks keep their size (see Extrapolation::new)
    let fixed: Vec<u32> = g.dims.iter().map(|&a| if a < 3 { a } else { 0 }).collect();
    let dims = dims_create_fixed(ranks, &fixed).ok_or_else(|| match fixed.iter().filter(|&&d| d != 0).product::<u32>() {
        _ if !fixed.contains(&0) => GridError::AllDimensionsSmall { grid: g.describe() },
        kept => GridError::NotAMultiple { grid: g.describe(), kept, ranks },
    })?;
    let how = if fixed.contains(&0) && fixed.iter().any(|&d| d != 0) {
        "not MPI_Dims_create's: dimensions of fewer than 3 traced ranks keep their size, give --grid if the program makes another"
    } else {
        "not MPI_Dims_create's: give --grid if the program makes another"
    };
    Ok((dims, how))
}

/// Whether dimension `d` of a traced grid grows as pairs of neighbours
/// (periodic, 2 ranks): each rank's two neighbours along it are the same
/// rank, which at scale stands for the one it pairs with.
fn grows_in_pairs(g: &Grid, d: usize) -> bool {
    g.dims[d] == 2 && g.periodic[d]
}

/// Parses "6x6" or "4x4x8" (also with '×').
pub fn parse_dims(s: &str) -> Result<Vec<u32>, GridError> {
    let dims: Result<Vec<u32>, _> = s.split(['x', '×', 'X']).map(|p| p.trim().parse::<u32>()).collect();
    match dims {
        Ok(d) if !d.is_empty() && d.len() <= MAX_DIMS && !d.contains(&0) => Ok(d),
        _ => Err(GridError::Parse { text: s.into() }),
    }
}

/// A sub-grid communicator: the ranks that share this rank's coordinates
/// outside the `free` dimensions, in row-major order of the free ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strided {
    /// World rank of its member 0.
    pub base: u32,
    /// (size, stride in world ranks) of each free dimension, outermost first.
    pub free: [(u32, u32); MAX_DIMS],
    pub nfree: u8,
}

impl Strided {
    /// Its member count (never zero: a rank is a member of its own communicators).
    pub fn count(&self) -> u32 {
        self.free[..self.nfree as usize].iter().map(|f| f.0).product()
    }

    pub fn world(&self, mut local: u32) -> u32 {
        let mut w = self.base;
        for &(size, stride) in self.free[..self.nfree as usize].iter().rev() {
            w += (local % size) * stride;
            local /= size;
        }
        w
    }
}

/// A communicator of the template, rebuilt on the target grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubGrid {
    pub members: Strided,
    /// This rank's index in it.
    pub me: u32,
    /// Which dimensions are free (bit d): communicators of the same shape
    /// share a tag space, as disjoint ones never exchange messages.
    pub mask: u8,
    /// The whole grid in world order.
    pub world: bool,
}

/// The template grid, the target grid and the scaling rule.
#[derive(Debug, Clone)]
pub struct Extrapolation {
    pub template: Grid,
    pub target: Grid,
    /// Strong scaling: messages ∝ subdomain surface, computation ∝ volume.
    pub strong: bool,
    /// How the target grid was chosen, for the description ("" when given).
    pub chosen: &'static str,
    /// Per mask of free dimensions, the target's sub-grid through rank 0:
    /// `comm_at` runs for every round of every collective on a
    /// sub-communicator, so its (size, stride) pairs are worked out once.
    plans: [Strided; 1 << MAX_DIMS],
}

impl Extrapolation {
    pub fn new(template: Grid, target_dims: Vec<u32>, strong: bool) -> Result<Self, GridError> {
        if target_dims.len() != template.dims.len() {
            return Err(GridError::Dimensions {
                dims: template.dims.len(),
                traced: template.describe(),
                target: describe_dims(&target_dims),
            });
        }
        // a dimension repeats its interior: one of fewer than 3 ranks has none
        // to repeat, and keeps its size (LAMMPS on 9 ranks: 1×3×3), unless it
        // is periodic with 2 ranks, which repeats as pairs (`class`)
        for (d, (&a, &big)) in template.dims.iter().zip(&target_dims).enumerate() {
            if grows_in_pairs(&template, d) && big != a {
                if !big.is_multiple_of(2) {
                    return Err(GridError::OddPairs { dim: d, traced: template.describe(), target_ranks: big });
                }
            } else if a < 3 && big != a {
                return Err(GridError::KeepsSize { dim: d, traced: template.describe(), ranks: a, target_ranks: big });
            }
            if a >= 3 && big < 3 {
                return Err(GridError::TargetTooSmall { target: describe_dims(&target_dims), dim: d });
            }
        }
        let target = Grid::new(target_dims, template.periodic.clone())?;
        let plans = std::array::from_fn(|mask| strided(&target, &[0; MAX_DIMS], mask as u8));
        Ok(Extrapolation { template, target, strong, chosen: "", plans })
    }

    /// The template coordinate of a target coordinate along `d`: edges to
    /// edges, the interior cycling over the template's interior; along a
    /// periodic dimension of 2 traced ranks, even coordinates to 0 and odd
    /// ones to 1, so that each pair (2k, 2k + 1) exchanges what ranks 0 and
    /// 1 did (their offsets are +1 and −1, `Grid::offset`).
    pub fn class(&self, d: usize, x: u32) -> u32 {
        let (a, big) = (self.template.dims[d], self.target.dims[d]);
        if a == 2 {
            x % 2
        } else if x == 0 {
            0
        } else if x == big - 1 {
            a - 1
        } else {
            1 + (x - 1) % (a - 2)
        }
    }

    /// The template rank that target rank `rank` replays.
    pub fn template_rank(&self, rank: u32) -> u32 {
        let c = self.target.coords(rank);
        let mut t = [0; MAX_DIMS];
        for d in 0..self.template.dims.len() {
            t[d] = self.class(d, c[d]);
        }
        self.template.rank(&t)
    }

    /// A target rank that replays template rank `tr`, if any does (a
    /// template interior wider than the target's has unused ranks).
    pub fn representative(&self, tr: u32) -> Option<u32> {
        let c = self.template.coords(tr);
        let mut q = [0; MAX_DIMS];
        for d in 0..self.template.dims.len() {
            let (a, big) = (self.template.dims[d], self.target.dims[d]);
            q[d] = match c[d] {
                0 => 0,
                x if x == a - 1 => big - 1,
                x if x <= big - 2 => x,
                _ => return None,
            };
        }
        Some(self.target.rank(&q))
    }

    /// Grid offsets from template rank `from` to `to`, nearest neighbours only.
    fn delta(&self, from: u32, to: u32) -> Result<[i64; MAX_DIMS], GridError> {
        let g = &self.template;
        let (a, b) = (g.coords(from), g.coords(to));
        let mut d = [0; MAX_DIMS];
        for k in 0..g.dims.len() {
            d[k] = g.offset(k, a[k], b[k]);
            if d[k].abs() > 1 {
                return Err(GridError::NotNearest { peer: to, distance: d[k].abs(), dim: k, grid: g.describe() });
            }
        }
        Ok(d)
    }

    /// Where template rank `tr`'s peer `tpeer` is for target rank `rank`.
    pub fn peer(&self, rank: u32, tr: u32, tpeer: u32) -> Result<u32, GridError> {
        let d = self.delta(tr, tpeer)?;
        let mut c = self.target.coords(rank);
        for (k, &dk) in d.iter().enumerate().take(self.target.dims.len()) {
            let n = self.target.dims[k] as i64;
            let x = c[k] as i64 + dk;
            let x = if self.target.periodic[k] { x.rem_euclid(n) } else { x };
            if !(0..n).contains(&x) {
                return Err(GridError::PeerOutside { grid: self.target.describe() });
            }
            c[k] = x as u32;
        }
        Ok(self.target.rank(&c))
    }

    /// Strong scaling: the factor on a message between neighbours `tr` and
    /// `tpeer` (its face shrinks along the dimensions it does not cross).
    pub fn surface(&self, tr: u32, tpeer: u32) -> Result<f64, GridError> {
        let d = self.delta(tr, tpeer)?;
        Ok((0..self.template.dims.len()).filter(|&k| d[k] == 0).map(|k| self.shrink(k)).product())
    }

    /// Strong scaling: the factor on computation (the subdomain's volume).
    pub fn volume(&self) -> f64 {
        (0..self.template.dims.len()).map(|k| self.shrink(k)).product()
    }

    fn shrink(&self, k: usize) -> f64 {
        self.template.dims[k] as f64 / self.target.dims[k] as f64
    }

    /// Scales a neighbour message's bytes under strong scaling.
    pub fn bytes(&self, tr: u32, tpeer: u32, bytes: u64) -> Result<u64, GridError> {
        if !self.strong || bytes == 0 {
            return Ok(bytes);
        }
        Ok(((bytes as f64 * self.surface(tr, tpeer)?).round() as u64).max(1))
    }

    /// A communicator whose template members (world ranks, in communicator
    /// order) are given, rebuilt around target rank `rank`.
    pub fn sub_grid(&self, rank: u32, tr: u32, members: &[u32]) -> Result<SubGrid, GridError> {
        let g = &self.template;
        let nd = g.dims.len();
        let mine = g.coords(tr);
        let mut mask = 0u8;
        for &m in members {
            if m >= g.size() {
                return Err(GridError::MemberOutside { member: m, grid: g.describe() });
            }
            let c = g.coords(m);
            for k in 0..nd {
                if c[k] != mine[k] {
                    mask |= 1 << k;
                }
            }
        }
        let free: Vec<usize> = (0..nd).filter(|&k| mask & (1 << k) != 0).collect();
        let shape = strided(g, &mine, mask);
        let fits = shape.count() as usize == members.len() && members.iter().enumerate().all(|(i, &m)| shape.world(i as u32) == m);
        if !fits {
            let names: Vec<String> = free.iter().map(|k| k.to_string()).collect();
            return Err(GridError::NotASubGrid {
                members: members.len(),
                first: members[..members.len().min(8)].to_vec(),
                grid: g.describe(),
                varies: names.join(", "),
            });
        }
        Ok(self.comm_at(rank, mask))
    }

    /// Target rank `rank`'s communicator spanning the dimensions in `mask`.
    pub fn comm_at(&self, rank: u32, mask: u8) -> SubGrid {
        let plan = &self.plans[mask as usize & ((1 << MAX_DIMS) - 1)];
        let (mut me, mut offset) = (0u32, 0u32);
        for &(size, stride) in &plan.free[..plan.nfree as usize] {
            let x = rank / stride % size;
            (me, offset) = (me * size + x, offset + x * stride);
        }
        let members = Strided { base: rank - offset, ..*plan };
        SubGrid { members, me, mask, world: plan.nfree as usize == self.target.dims.len() }
    }

    /// The local index of template rank `w` in a template communicator
    /// spanning the dimensions in `mask` (row-major over them).
    pub fn local_in(&self, mask: u8, w: u32) -> Result<u32, GridError> {
        let g = &self.template;
        if w >= g.size() {
            return Err(GridError::RootOutside { root: w, grid: g.describe() });
        }
        let c = g.coords(w);
        Ok((0..g.dims.len()).filter(|&k| mask & (1 << k) != 0).fold(0, |l, k| l * g.dims[k] + c[k]))
    }

    /// The template member (local index) of the class of member `local` of
    /// a target communicator spanning the dimensions in `mask`.
    pub fn template_member(&self, mask: u8, mut local: u32) -> u32 {
        let free: Vec<usize> = (0..self.target.dims.len()).filter(|&k| mask & (1 << k) != 0).collect();
        let mut at = [0u32; MAX_DIMS];
        for (i, &k) in free.iter().enumerate().rev() {
            at[i] = local % self.target.dims[k];
            local /= self.target.dims[k];
        }
        free.iter().enumerate().fold(0, |l, (i, &k)| l * self.template.dims[k] + self.class(k, at[i]))
    }

    /// A collective's root (local index `troot` in a template communicator
    /// of shape `mask`), as a local index in
    /// the target's communicator: roots on a low or high edge of each free
    /// dimension keep their place; interior roots have none.
    pub fn root(&self, mask: u8, troot: u32) -> Result<u32, GridError> {
        let g = &self.template;
        let free: Vec<usize> = (0..g.dims.len()).filter(|&k| mask & (1 << k) != 0).collect();
        let mut rest = troot;
        let mut local = vec![0u32; free.len()];
        for (i, &k) in free.iter().enumerate().rev() {
            local[i] = rest % g.dims[k];
            rest /= g.dims[k];
        }
        let mut out = 0u32;
        for (i, &k) in free.iter().enumerate() {
            let (a, big) = (g.dims[k], self.target.dims[k]);
            let x = match local[i] {
                0 => 0,
                x if x == a - 1 => big - 1,
                x => return Err(GridError::InteriorRoot { at: x, of: a, dim: k }),
            };
            out = out * big + x;
        }
        Ok(out)
    }
}

/// The ranks of grid `t` that share `at`'s coordinates outside the
/// dimensions in `mask`, in row-major order of those.
fn strided(t: &Grid, at: &Coords, mask: u8) -> Strided {
    let mut base = *at;
    let mut s = Strided { base: 0, free: [(1, 0); MAX_DIMS], nfree: 0 };
    for k in (0..t.dims.len()).filter(|&k| mask & (1 << k) != 0) {
        base[k] = 0;
        s.free[s.nfree as usize] = (t.dims[k], t.stride(k));
        s.nfree += 1;
    }
    s.base = t.rank(&base);
    s
}

/// The template's grid, if a rank created a Cartesian communicator spanning
/// the world in world order: `[ndims, dims…, periods…]` of its comm_new.
pub fn from_cart_create(r: &Record, payload: &[u64], world: u32) -> Option<Result<Grid, GridError>> {
    if r.op != op::COMM_NEW || r.tag != 7 || payload.is_empty() {
        return None;
    }
    let Some(nd) = format::cart_dims(payload) else {
        return Some(Err(GridError::CartPayload));
    };
    let Ok(dims) = payload[1..1 + nd].iter().map(|&d| u32::try_from(d)).collect::<Result<Vec<u32>, _>>() else {
        return Some(Err(GridError::CartTooLarge));
    };
    let periodic: Vec<bool> = payload[1 + nd..].iter().map(|&p| p != 0).collect();
    if dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64)) != Some(world as u64) {
        return None; // a grid over part of the world: not the template's layout
    }
    Some(Grid::new(dims, periodic))
}

/// The grid of 2 or 3 dimensions (at least 3 ranks each) that explains
/// every neighbour pair as a ±1 offset per dimension, periodic along a
/// dimension only where a pair needs it. Of several, the one with the
/// fewest periodic dimensions, then the fewest distinct offsets, wins; a
/// tie is an error naming the candidates.
pub fn infer(world: u32, pairs: &[(u32, u32)]) -> Result<Grid, GridError> {
    let mut found: Vec<((usize, usize), Grid)> = Vec::new();
    for nd in 2..=MAX_DIMS {
        for dims in factorizations(world, nd) {
            if dims.iter().any(|&d| d < 3) || pairs.is_empty() {
                continue;
            }
            let open = Grid { dims: dims.clone(), periodic: vec![false; nd] };
            let mut periodic = vec![false; nd];
            let mut offsets = std::collections::BTreeSet::new();
            let ok = pairs.iter().all(|&(a, b)| {
                let (ca, cb) = (open.coords(a), open.coords(b));
                let mut off = [0i64; MAX_DIMS];
                let fits = (0..nd).all(|k| {
                    off[k] = cb[k] as i64 - ca[k] as i64;
                    if off[k].abs() == dims[k] as i64 - 1 && dims[k] > 2 && off[k].abs() > 1 {
                        periodic[k] = true;
                        off[k] = -off[k].signum();
                    }
                    off[k].abs() <= 1
                });
                offsets.insert(off);
                fits
            });
            if ok {
                let score = (periodic.iter().filter(|&&p| p).count(), offsets.len());
                found.push((score, Grid { dims, periodic }));
            }
        }
    }
    found.sort_by_key(|f| f.0);
    match found.as_slice() {
        [] => Err(GridError::NoneFits),
        [(_, g)] => Ok(g.clone()),
        [(a, g), (b, h), ..] if a == b => Err(GridError::Ambiguous { a: g.describe(), b: h.describe() }),
        [(_, g), ..] => Ok(g.clone()),
    }
}

/// Ordered factorizations of `n` into `nd` factors.
fn factorizations(n: u32, nd: usize) -> Vec<Vec<u32>> {
    if nd == 1 {
        return vec![vec![n]];
    }
    let mut out = Vec::new();
    for f in 1..=n {
        if n.is_multiple_of(f) {
            for mut rest in factorizations(n / f, nd - 1) {
                rest.insert(0, f);
                out.push(rest);
            }
        }
    }
    out
}

/// The point-to-point (world rank) pairs of a template rank's records.
pub fn pairs_of(rank: u32, r: &Record, payload: &[u64], out: &mut Vec<(u32, u32)>) {
    if super::format::has_p2p_peer(r.op) && r.peer >= 0 && r.comm == 0 {
        out.push((rank, r.peer as u32));
    } else if let Some((c, _)) = format::collective_of(r.op) {
        if c.name().starts_with("neighbor_") && payload.len() >= 2 {
            let n = format::neighbour_counts(payload).map_or(0, |(ns, nd)| ns + nd);
            for &p in payload.get(2..2 + n).unwrap_or(&[]) {
                if (p as i64) >= 0 {
                    out.push((rank, p as u32));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_create_matches_mpi() {
        // Open MPI and MPICH give these for MPI_Dims_create(n, d).
        assert_eq!(dims_create(36, 2), vec![6, 6]);
        assert_eq!(dims_create(12, 2), vec![4, 3]);
        assert_eq!(dims_create(216, 3), vec![6, 6, 6]);
        assert_eq!(dims_create(24, 3), vec![4, 3, 2]);
        assert_eq!(dims_create(7, 2), vec![7, 1]);
        assert_eq!(dims_create(1 << 20, 2), vec![1024, 1024]);
    }

    #[test]
    fn a_dims_create_grid_grows_as_dims_create_or_is_refused() {
        let g = |d: &[u32]| Grid::new(d.to_vec(), vec![false; d.len()]).unwrap();
        // LAMMPS traced at 16 ranks (4×2×2): at 32 MPI_Dims_create gives 4×4×2,
        // which grows a dimension of 2 traced ranks; never the silent 8×2×2
        let e = target_dims(&g(&[4, 2, 2]), 32).unwrap_err().to_string();
        assert!(e.contains("MPI_Dims_create's 4×4×2") && e.contains("dimension 1 grows from 2 to 4"), "{e}");
        assert!(e.contains("from 27 ranks") && e.contains("--grid"), "{e}");
        assert_eq!(target_dims(&g(&[3, 3, 3]), 216).unwrap().0, vec![6, 6, 6]);
        assert_eq!(target_dims(&g(&[3, 3]), 12).unwrap().0, vec![4, 3]);
        // the traced order of the dimensions is kept: 3×4 → 3×4 at 12, 4×6 at 24
        assert_eq!(target_dims(&g(&[3, 4]), 24).unwrap().0, vec![4, 6]);
        let (dims, how) = target_dims(&g(&[4, 4, 4]), 128).unwrap();
        assert_eq!((dims, how), (vec![8, 4, 4], "MPI_Dims_create's, as the traced grid is"));
        // a grid MPI_Dims_create does not make keeps its small dimensions, and says so
        let (dims, how) = target_dims(&g(&[6, 2]), 24).unwrap();
        assert_eq!(dims, vec![12, 2]);
        assert!(how.starts_with("not MPI_Dims_create's"), "{how}");
        assert!(target_dims(&g(&[2, 2, 1]), 8).unwrap_err().to_string().contains("no interior"));
    }

    #[test]
    fn a_periodic_dimension_of_2_grows_in_pairs_to_even_sizes() {
        let g = |d: &[u32]| Grid::new(d.to_vec(), vec![true; d.len()]).unwrap();
        // LAMMPS (periodic) traced at 16 ranks: 4×2×2 → MPI_Dims_create's 4×4×2 at 32, 4×4×4 at 64
        assert_eq!(target_dims(&g(&[4, 2, 2]), 32).unwrap().0, vec![4, 4, 2]);
        assert_eq!(target_dims(&g(&[2, 2, 2]), 64).unwrap().0, vec![4, 4, 4]);
        // 48 is 4×4×3: a dimension of 2 grown to 3 has no pairs
        let e = target_dims(&g(&[4, 2, 2]), 48).unwrap_err().to_string();
        assert!(e.contains("grows in pairs: to even sizes"), "{e}");
        let e = Extrapolation::new(g(&[2, 3]), vec![3, 3], false).unwrap_err().to_string();
        assert!(e.contains("to an even number of ranks, not 3"), "{e}");
        // a dimension of 1 still keeps its size
        assert!(target_dims(&g(&[2, 2, 1]), 8).unwrap_err().to_string().contains("grows from 1 to 2"));
        // 2×2 → 4×4: ranks pair up along each dimension, and every message has its partner
        let e = Extrapolation::new(g(&[2, 2]), vec![4, 4], false).unwrap();
        let classes: Vec<u32> = (0..16).map(|r| e.template_rank(r)).collect();
        assert_eq!(classes, vec![0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3]);
        for r in 0..16 {
            let tr = e.template_rank(r);
            for tpeer in 0..4 {
                let q = e.peer(r, tr, tpeer).unwrap();
                // the peer replays `tpeer`, and its peer for `tr` is `r`: sends meet receives
                assert_eq!(e.template_rank(q), tpeer);
                assert_eq!(e.peer(q, tpeer, tr).unwrap(), r, "{r} → {q}");
            }
        }
        // (2, 1) replays template (0, 1) = rank 1; its template neighbour along 0 (rank 3) is (3, 1)
        assert_eq!(e.peer(9, 1, 3).unwrap(), 13);
        // a non-periodic dimension of 2 has no pairs at scale: its ranks are edges
        let open = Grid::new(vec![4, 2], vec![false; 2]).unwrap();
        let e = Extrapolation::new(open, vec![4, 4], false).unwrap_err().to_string();
        assert!(e.contains("only a periodic dimension grows from 2"), "{e}");
    }

    #[test]
    fn dims_create_keeps_the_fixed_sizes() {
        // as MPI_Dims_create with nonzero entries given
        assert_eq!(dims_create_fixed(4096, &[1, 0, 0]), Some(vec![1, 64, 64]));
        assert_eq!(dims_create_fixed(10, &[1, 0, 0]), Some(vec![1, 5, 2]));
        assert_eq!(dims_create_fixed(12, &[0, 2]), Some(vec![6, 2]));
        assert_eq!(dims_create_fixed(36, &[0, 0]), Some(vec![6, 6]));
        assert_eq!(dims_create_fixed(4, &[1, 2, 2]), Some(vec![1, 2, 2]));
        assert_eq!(dims_create_fixed(8, &[1, 2, 2]), None, "nothing left to grow");
        assert_eq!(dims_create_fixed(7, &[2, 0]), None, "2 does not divide 7");
    }

    #[test]
    fn a_dimension_without_interior_keeps_its_size() {
        let t = |dims: &[u32]| Grid::new(dims.to_vec(), vec![true; dims.len()]).unwrap();
        assert!(Extrapolation::new(t(&[1, 3, 3]), vec![1, 8, 5], false).is_ok());
        assert!(Extrapolation::new(t(&[2, 3]), vec![2, 9], false).is_ok());
        let e = Extrapolation::new(t(&[1, 3, 3]), vec![2, 8, 5], false).unwrap_err().to_string();
        assert!(e.contains("dimension 0 of the traced grid") && e.contains("has 1 rank, no interior"), "{e}");
        let e = Extrapolation::new(t(&[3, 3]), vec![2, 8], false).unwrap_err().to_string();
        assert!(e.contains("at least 3 ranks along dimension 0"), "{e}");
    }

    fn ext(t: &[u32], big: &[u32], periodic: bool) -> Extrapolation {
        Extrapolation::new(Grid::new(t.to_vec(), vec![periodic; t.len()]).unwrap(), big.to_vec(), false).unwrap()
    }

    #[test]
    fn classes_and_peers_on_a_6x6_from_3x3() {
        let e = ext(&[3, 3], &[6, 6], false);
        // target (0,0) → template (0,0); (2,3) → interior (1,1); (5,5) → (2,2); (0,4) → (0,1)
        assert_eq!(e.template_rank(0), 0);
        assert_eq!(e.template_rank(2 * 6 + 3), 4);
        assert_eq!(e.template_rank(35), 8);
        assert_eq!(e.template_rank(4), 1);
        // interior target rank (2,3) replays template 4; its template east neighbour 5 is (2,4)
        assert_eq!(e.peer(15, 4, 5).unwrap(), 16);
        // north neighbour 1 (0,1) is (1,3)
        assert_eq!(e.peer(15, 4, 1).unwrap(), 9);
        // diagonal 8 (2,2) is (3,4)
        assert_eq!(e.peer(15, 4, 8).unwrap(), 22);
        // a far peer is refused
        assert!(e.peer(0, 0, 2).unwrap_err().to_string().contains("2 ranks away"));
    }

    #[test]
    fn periodic_neighbours_wrap_on_the_target() {
        let e = ext(&[3, 3], &[6, 6], true);
        // template (0,0)'s west neighbour is (0,2) = rank 2; target (0,0)'s is (0,5)
        assert_eq!(e.peer(0, 0, 2).unwrap(), 5);
        assert_eq!(e.peer(0, 0, 6).unwrap(), 30);
    }

    /// Every sub-communicator of every rank on target grids of two and
    /// three dimensions, against its members listed from coordinates.
    #[test]
    fn every_sub_grid_holds_the_ranks_that_share_its_fixed_coordinates() {
        for (template, target) in [(vec![3, 3, 3], vec![8, 4, 16]), (vec![3, 3, 3], vec![6, 5, 7]), (vec![3, 3], vec![12, 8])] {
            let e = ext(&template, &target, false);
            let t = &e.target;
            for mask in 1u8..1 << target.len() {
                for r in 0..t.size() {
                    let g = e.comm_at(r, mask);
                    let c = t.coords(r);
                    let members: Vec<u32> =
                        (0..t.size()).filter(|&m| (0..target.len()).all(|k| mask & (1 << k) != 0 || t.coords(m)[k] == c[k])).collect();
                    let listed: Vec<u32> = (0..g.members.count()).map(|i| g.members.world(i)).collect();
                    assert_eq!(listed, members, "rank {r}, dimensions {mask:b} of {target:?}");
                    assert_eq!(members[g.me as usize], r);
                    assert_eq!(g.world, mask as usize == (1 << target.len()) - 1);
                }
            }
        }
    }

    #[test]
    fn rows_and_columns_rebuild_on_the_target() {
        let e = ext(&[3, 3], &[6, 6], false);
        // template rank 4's row is [3,4,5]: target rank 15 (2,3) gets row 2: 12..18, index 3
        let row = e.sub_grid(15, 4, &[3, 4, 5]).unwrap();
        assert_eq!((row.members.count(), row.me, row.world), (6, 3, false));
        assert_eq!((0..6).map(|i| row.members.world(i)).collect::<Vec<_>>(), vec![12, 13, 14, 15, 16, 17]);
        let col = e.sub_grid(15, 4, &[1, 4, 7]).unwrap();
        assert_eq!((0..6).map(|i| col.members.world(i)).collect::<Vec<_>>(), vec![3, 9, 15, 21, 27, 33]);
        assert_eq!(col.me, 2);
        assert!(e.sub_grid(15, 4, &(0..9).collect::<Vec<_>>()).unwrap().world);
        assert!(e.sub_grid(15, 4, &[5, 4, 3]).unwrap_err().to_string().contains("not a row"));
        assert!(e.sub_grid(15, 4, &[4, 5]).is_err());
        // a root at the high end of a row goes to the high end
        assert_eq!(e.root(0b10, 2).unwrap(), 5);
        assert_eq!(e.root(0b11, 4), Err(GridError::InteriorRoot { at: 1, of: 3, dim: 0 }));
    }

    #[test]
    fn strong_scaling_shrinks_faces_and_volumes() {
        let t = Grid::new(vec![3, 3, 3], vec![false; 3]).unwrap();
        let e = Extrapolation::new(t, vec![6, 6, 6], true).unwrap();
        // a face message (offset along one dimension) keeps 2 of 3 extents: (1/2)^2
        assert_eq!(e.bytes(13, 14, 4000).unwrap(), 1000);
        // an edge message (two dimensions crossed): 1/2
        assert_eq!(e.bytes(13, 17, 4000).unwrap(), 2000);
        assert_eq!(e.volume(), 0.125);
    }

    #[test]
    fn grids_are_inferred_from_neighbour_pairs() {
        let g = Grid::new(vec![3, 4], vec![false, false]).unwrap();
        let mut pairs = Vec::new();
        for r in 0..12 {
            let c = g.coords(r);
            if c[1] + 1 < 4 {
                pairs.push((r, r + 1));
            }
            if c[0] + 1 < 3 {
                pairs.push((r, r + 4));
            }
        }
        assert_eq!(infer(12, &pairs).unwrap(), g);
        // partners 6 apart are 2 apart along a dimension of 3×4 and of 4×3: no grid
        let far: Vec<(u32, u32)> = (0..12).map(|r| (r, (r + 6) % 12)).collect();
        assert_eq!(infer(12, &far), Err(GridError::NoneFits));
    }
}

//! Rank-to-node tables: node-aware Cartesian blocks (each node holds a
//! compact block of the process grid, minimising off-node neighbours), the
//! same laid onto a torus (neighbouring blocks on neighbouring nodes), and a
//! user's file (one node per rank).
//!
//! Grids are given with the first dimension varying fastest in the rank
//! number (rank = x + px·(y + py·z)), as the Krylov workload numbers them.

/// The block of the process grid a node holds: factors of `per_node`, one
/// per dimension, each dividing that dimension, with the least surface (so
/// the fewest halo neighbours off the node); ties prefer blocks long in the
/// fastest dimension (contiguous ranks).
pub fn node_blocks(grid: &[u32], per_node: u32) -> Result<Vec<u32>, String> {
    // (surface, minus each extent) ranks the candidates; the least wins
    type Ranked = ((u64, Vec<i64>), Vec<u32>);
    let mut best: Option<Ranked> = None;
    for dims in factorizations(per_node, grid.len()) {
        if grid.iter().zip(&dims).any(|(g, d)| g % d != 0) {
            continue;
        }
        let volume: u64 = dims.iter().map(|&d| d as u64).product();
        let surface: u64 = dims.iter().map(|&d| volume / d as u64).sum();
        let key = (surface, dims.iter().map(|&d| -(d as i64)).collect::<Vec<_>>());
        if best.as_ref().is_none_or(|(k, _)| key < *k) {
            best = Some((key, dims));
        }
    }
    best.map(|(_, d)| d).ok_or_else(|| {
        format!("network.mapping: no block of {per_node} ranks divides the process grid {grid:?}; give mapping.node_grid or change ranks_per_node")
    })
}

/// Every way to write n as an ordered product of k factors.
fn factorizations(n: u32, k: usize) -> Vec<Vec<u32>> {
    if k <= 1 {
        return vec![vec![n]];
    }
    (1..=n)
        .filter(|d| n.is_multiple_of(*d))
        .flat_map(|d| {
            factorizations(n / d, k - 1).into_iter().map(move |mut rest| {
                rest.insert(0, d);
                rest
            })
        })
        .collect()
}

/// Node of every rank when each node holds one `block` of the grid. With
/// `torus`, node-grid coordinates become torus coordinates (the node grid
/// must fit in the torus), so neighbouring blocks are one hop apart.
pub fn cartesian(grid: &[u32], block: &[u32], torus: Option<[u32; 3]>) -> Result<Vec<u32>, String> {
    if block.len() != grid.len() || grid.iter().zip(block).any(|(&g, &b)| b == 0 || g % b != 0) {
        return Err(format!("network.mapping.node_grid: {block:?} must divide the process grid {grid:?} dimension by dimension"));
    }
    let mut node_dims: Vec<u32> = grid.iter().zip(block).map(|(g, b)| g / b).collect();
    if let Some(t) = torus {
        if node_dims.len() > 3 || node_dims.iter().zip(t).any(|(&d, t)| d > t) {
            return Err(format!("network.mapping: a node grid of {node_dims:?} does not fit the torus {t:?}"));
        }
        node_dims = t.to_vec();
    }
    let ranks: u64 = grid.iter().map(|&g| g as u64).product();
    let nodes = (0..ranks)
        .map(|r| {
            let (mut rest, mut node, mut scale) = (r, 0u64, 1u64);
            for (d, (&g, &b)) in grid.iter().zip(block).enumerate() {
                let c = rest % g as u64;
                rest /= g as u64;
                node += c / b as u64 * scale;
                scale *= node_dims[d] as u64;
            }
            node as u32
        })
        .collect();
    Ok(nodes)
}

use crate::rule::RuleError;

/// One node number per line (rank order); '#' starts a comment.
pub fn read_file(path: &str, ranks: u32) -> Result<Vec<u32>, RuleError> {
    let text = crate::files::read_text(path, "mapping file").map_err(|e| RuleError::new("network.mapping.path", e))?;
    let mut nodes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.split('#').next().unwrap_or("").trim();
        if t.is_empty() {
            continue;
        }
        let n: u32 = t
            .parse()
            .map_err(|_| RuleError::new("network.mapping", format!("{path}:{}: expected a node number (0 to {})", i + 1, u32::MAX)))?;
        nodes.push(n);
        if nodes.len() > ranks as usize {
            break;
        }
    }
    if nodes.len() != ranks as usize {
        let count = if nodes.len() > ranks as usize { "more".to_string() } else { nodes.len().to_string() };
        return Err(RuleError::new("network.mapping", format!("{path}: {count} node numbers for {ranks} ranks")));
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_compact_and_nodes_follow_them() {
        assert_eq!(node_blocks(&[4, 4], 4).unwrap(), vec![2, 2]);
        assert_eq!(node_blocks(&[8, 2, 2], 8).unwrap(), vec![2, 2, 2]);
        assert!(node_blocks(&[3, 3], 2).is_err());
        // 4×2 grid, 2×1 blocks: ranks 0,1 on node 0, 2,3 on node 1, 4,5 on node 2 …
        assert_eq!(cartesian(&[4, 2], &[2, 1], None).unwrap(), vec![0, 0, 1, 1, 2, 2, 3, 3]);
        // 2×2 blocks of a 4×4 grid onto a 4×4×1 torus: node (x, y) = x + 4y.
        let on_torus = cartesian(&[4, 4], &[2, 2], Some([4, 4, 1])).unwrap();
        assert_eq!((on_torus[0], on_torus[2], on_torus[8]), (0, 1, 4));
        assert!(cartesian(&[4, 4], &[2, 2], Some([1, 1, 1])).is_err());
    }
}

//! Partially directed graphs: the skeleton and orientation phases of the PC algorithm, the CPDAG of
//! a DAG, and the structural Hamming distance.
//!
//! **Orientation** (Spirtes et al. 2000; Meek 1995). From an undirected skeleton and a rule saying
//! which unshielded triples `i − k − j` (`i`, `j` not adjacent) are colliders:
//! 1. every collider gives `i → k ← j`. When two colliders ask for opposite directions on one edge,
//!    the edge stays undirected and is reported as a conflict (the "conservative" resolution: the
//!    result does not depend on the order in which triples are visited);
//! 2. Meek's rules, applied in rounds until nothing changes. In each round every rule is evaluated on
//!    the graph as it was at the start of the round and all implied orientations are applied at once
//!    (an edge implied in both directions stays undirected and is reported), so the result does not
//!    depend on the order of the nodes:
//!    - R1: `c → a − b`, `c`, `b` not adjacent ⇒ `a → b`;
//!    - R2: `a → c → b` and `a − b` ⇒ `a → b`;
//!    - R3: `a − c → b`, `a − d → b`, `c`, `d` not adjacent, `a − b` ⇒ `a → b`.
//!
//!    Without background knowledge R1–R3 are complete (Meek 1995, Thm. 2): R4 never fires.
//!
//! **CPDAG of a DAG**: its skeleton oriented with its own v-structures as the colliders.
//!
//! **Structural Hamming distance** between two partially directed graphs (Tsamardinos et al. 2006):
//! the number of node pairs whose edge differs — present in one graph only, or present in both with a
//! different mark (`a → b`, `b → a` or `a − b`).

use std::collections::BTreeSet;

/// A partially directed graph on `n` nodes. `a − b` (undirected) carries both marks `a ⇀ b` and
/// `b ⇀ a`; `a → b` carries only `a ⇀ b`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pdag {
    n: usize,
    marks: Vec<bool>,
}

/// The type of the edge between two nodes, as seen from the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    None,
    Out,
    In,
    Undirected,
}

impl Pdag {
    /// `n` nodes, no edges.
    pub fn empty(n: usize) -> Self {
        Self { n, marks: vec![false; n * n] }
    }

    /// `n` nodes, every pair joined by an undirected edge.
    pub fn complete(n: usize) -> Self {
        let mut g = Self::empty(n);
        for a in 0..n {
            for b in a + 1..n {
                g.add_undirected(a, b);
            }
        }
        g
    }

    /// A DAG from its directed edges `(from, to)`. Does not check acyclicity.
    pub fn from_directed(n: usize, edges: &[(usize, usize)]) -> Self {
        let mut g = Self::empty(n);
        for &(a, b) in edges {
            g.add_directed(a, b);
        }
        g
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.n
    }

    fn mark(&self, a: usize, b: usize) -> bool {
        self.marks[a * self.n + b]
    }

    fn set(&mut self, a: usize, b: usize, v: bool) {
        self.marks[a * self.n + b] = v;
    }

    fn link(&self, a: usize, b: usize) -> Link {
        match (self.mark(a, b), self.mark(b, a)) {
            (false, false) => Link::None,
            (true, false) => Link::Out,
            (false, true) => Link::In,
            (true, true) => Link::Undirected,
        }
    }

    /// Adds (or replaces by) `a − b`.
    pub fn add_undirected(&mut self, a: usize, b: usize) {
        self.set(a, b, true);
        self.set(b, a, true);
    }

    /// Adds (or replaces by) `a → b`.
    pub fn add_directed(&mut self, a: usize, b: usize) {
        self.set(a, b, true);
        self.set(b, a, false);
    }

    /// Removes the edge between `a` and `b`.
    pub fn remove(&mut self, a: usize, b: usize) {
        self.set(a, b, false);
        self.set(b, a, false);
    }

    /// Whether `a` and `b` are joined.
    pub fn adjacent(&self, a: usize, b: usize) -> bool {
        self.mark(a, b) || self.mark(b, a)
    }

    /// Whether `a → b`.
    pub fn directed(&self, a: usize, b: usize) -> bool {
        self.link(a, b) == Link::Out
    }

    /// Whether `a − b`.
    pub fn undirected(&self, a: usize, b: usize) -> bool {
        self.link(a, b) == Link::Undirected
    }

    /// The nodes joined to `a`, ascending.
    pub fn neighbours(&self, a: usize) -> Vec<usize> {
        (0..self.n).filter(|&b| b != a && self.adjacent(a, b)).collect()
    }

    /// Every edge once: `(from, to, directed)`, undirected edges with `from < to`, ordered by the
    /// smaller then the larger node.
    pub fn edges(&self) -> Vec<(usize, usize, bool)> {
        let mut out = Vec::new();
        for a in 0..self.n {
            for b in a + 1..self.n {
                match self.link(a, b) {
                    Link::None => {}
                    Link::Out => out.push((a, b, true)),
                    Link::In => out.push((b, a, true)),
                    Link::Undirected => out.push((a, b, false)),
                }
            }
        }
        out
    }

    /// The skeleton: every edge made undirected.
    pub fn skeleton(&self) -> Pdag {
        let mut g = Pdag::empty(self.n);
        for (a, b, _) in self.edges() {
            g.add_undirected(a, b);
        }
        g
    }

    /// The CPDAG (Markov equivalence class) of a DAG given as a graph of directed edges.
    pub fn cpdag(&self) -> Pdag {
        Pdag::orient(&self.skeleton(), |i, k, j| self.directed(i, k) && self.directed(j, k)).0
    }

    /// Orients the undirected `skeleton` with the colliders `collider(i, k, j)` of its unshielded
    /// triples `i − k − j` (`i < j`), then Meek's rules (module docs). Returns the graph and the
    /// edges left undirected because of conflicting orientations, each as `(smaller, larger)`.
    pub fn orient(
        skeleton: &Pdag,
        collider: impl Fn(usize, usize, usize) -> bool,
    ) -> (Pdag, Vec<(usize, usize)>) {
        let n = skeleton.n;
        let mut arrows = BTreeSet::new();
        for k in 0..n {
            let nb = skeleton.neighbours(k);
            for (x, &i) in nb.iter().enumerate() {
                for &j in &nb[x + 1..] {
                    if !skeleton.adjacent(i, j) && collider(i, k, j) {
                        arrows.insert((i, k));
                        arrows.insert((j, k));
                    }
                }
            }
        }
        let mut g = skeleton.skeleton();
        let mut frozen = BTreeSet::new();
        apply(&mut g, &arrows, &mut frozen);
        loop {
            let implied = meek_round(&g, &frozen);
            if implied.is_empty() {
                break;
            }
            apply(&mut g, &implied, &mut frozen);
        }
        (g, frozen.into_iter().collect())
    }

    /// The structural Hamming distance to `other` (module docs). Errors never; graphs of different
    /// sizes compare over the nodes of the larger, the missing nodes having no edges.
    pub fn shd(&self, other: &Pdag) -> usize {
        let n = self.n.max(other.n);
        let link = |g: &Pdag, a: usize, b: usize| if a < g.n && b < g.n { g.link(a, b) } else { Link::None };
        (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
            .filter(|&(a, b)| link(self, a, b) != link(other, a, b))
            .count()
    }
}

/// Applies the orientations `arrows` (each `a → b` on an undirected, non-frozen edge); an edge asked
/// for in both directions is frozen undirected instead.
fn apply(g: &mut Pdag, arrows: &BTreeSet<(usize, usize)>, frozen: &mut BTreeSet<(usize, usize)>) {
    for &(a, b) in arrows {
        let key = (a.min(b), a.max(b));
        if frozen.contains(&key) || !g.undirected(a, b) {
            continue;
        }
        if arrows.contains(&(b, a)) {
            frozen.insert(key);
        } else {
            g.add_directed(a, b);
        }
    }
}

/// Every orientation Meek's rules R1–R3 imply on the current graph (module docs).
fn meek_round(g: &Pdag, frozen: &BTreeSet<(usize, usize)>) -> BTreeSet<(usize, usize)> {
    let n = g.n;
    let mut out = BTreeSet::new();
    for a in 0..n {
        for b in 0..n {
            if a == b || !g.undirected(a, b) || frozen.contains(&(a.min(b), a.max(b))) {
                continue;
            }
            let r1 = (0..n).any(|c| g.directed(c, a) && c != b && !g.adjacent(c, b));
            let r2 = (0..n).any(|c| g.directed(a, c) && g.directed(c, b));
            let r3 = || {
                let cs: Vec<usize> = (0..n).filter(|&c| g.undirected(a, c) && g.directed(c, b)).collect();
                cs.iter().enumerate().any(|(i, &c)| cs[i + 1..].iter().any(|&d| !g.adjacent(c, d)))
            };
            if r1 || r2 || r3() {
                out.insert((a, b));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every DAG's CPDAG: checked against hand-derived classes.
    #[test]
    fn cpdags_of_small_dags() {
        // chain 0 → 1 → 2: no v-structure, all undirected
        let chain = Pdag::from_directed(3, &[(0, 1), (1, 2)]).cpdag();
        assert!(chain.undirected(0, 1) && chain.undirected(1, 2) && !chain.adjacent(0, 2));
        // collider 0 → 2 ← 1 stays directed
        let coll = Pdag::from_directed(3, &[(0, 2), (1, 2)]).cpdag();
        assert!(coll.directed(0, 2) && coll.directed(1, 2));
        // collider then chain: 0 → 2 ← 1, 2 → 3: R1 orients 2 → 3
        let r1 = Pdag::from_directed(4, &[(0, 2), (1, 2), (2, 3)]).cpdag();
        assert!(r1.directed(2, 3));
        // R2: 0 → 1 ← 3 (v-structure), 1 → 2 (R1), and 0 → 2 with 0 − 2 in the skeleton: 0 → 1 → 2 ⇒ 0 → 2
        let r2 = Pdag::from_directed(4, &[(0, 1), (3, 1), (1, 2), (0, 2)]).cpdag();
        assert!(r2.directed(1, 2) && r2.directed(0, 2), "{:?}", r2.edges());
        // R3 (Meek 1995 Fig.): a − c → b, a − d → b, c, d not adjacent, a − b ⇒ a → b.
        // DAG: a → c, a → d, c → b, d → b, a → b; v-structure c → b ← d.
        let (a, b, c, d) = (0, 1, 2, 3);
        let r3 = Pdag::from_directed(4, &[(a, c), (a, d), (c, b), (d, b), (a, b)]).cpdag();
        assert!(r3.directed(c, b) && r3.directed(d, b) && r3.directed(a, b), "{:?}", r3.edges());
        assert!(r3.undirected(a, c) && r3.undirected(a, d));
    }

    /// Conflicting colliders leave the edge undirected and report it, whatever the node order.
    #[test]
    fn conflicts_are_order_independent() {
        // skeleton 0 − 1 − 2 − 3 (path); colliders claimed at 1 (0→1←2) and at 2 (1→2←3): edge 1−2
        // is asked for in both directions.
        let mut s = Pdag::empty(4);
        for (a, b) in [(0, 1), (1, 2), (2, 3)] {
            s.add_undirected(a, b);
        }
        let (g, conflicts) = Pdag::orient(&s, |_, _, _| true);
        assert_eq!(conflicts, vec![(1, 2)]);
        assert!(g.directed(0, 1) && g.directed(3, 2) && g.undirected(1, 2));
        // relabel the nodes in reverse: the same graph up to the relabelling
        let rev = |v: usize| 3 - v;
        let mut s2 = Pdag::empty(4);
        for (a, b) in [(0, 1), (1, 2), (2, 3)] {
            s2.add_undirected(rev(a), rev(b));
        }
        let (g2, c2) = Pdag::orient(&s2, |_, _, _| true);
        assert_eq!(c2, vec![(1, 2)]);
        for (a, b, dir) in g.edges() {
            assert_eq!(g2.directed(rev(a), rev(b)), dir);
            assert!(g2.adjacent(rev(a), rev(b)));
        }
    }

    #[test]
    fn shd_counts_differing_pairs() {
        let t = Pdag::from_directed(4, &[(0, 2), (1, 2), (2, 3)]);
        assert_eq!(t.shd(&t), 0);
        let mut e = t.clone();
        e.remove(2, 3); // missing edge
        e.add_undirected(0, 1); // extra edge
        e.add_directed(2, 0); // reversed
        assert_eq!(t.shd(&e), 3);
        let mut u = t.clone();
        u.add_undirected(0, 2); // directed vs undirected
        assert_eq!(t.shd(&u), 1);
        assert_eq!(Pdag::empty(2).shd(&Pdag::complete(3)), 3);
    }
}

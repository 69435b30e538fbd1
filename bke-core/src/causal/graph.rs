//! Partially directed graphs: the skeleton and orientation phases of the PC algorithm, the CPDAG of
//! a DAG, and the structural Hamming distance.
//!
//! **Orientation** (Spirtes et al. 2000; Meek 1995). From an undirected skeleton and a rule saying
//! which unshielded triples `i − k − j` (`i`, `j` not adjacent) are colliders, which are not, and
//! (conservative and majority rules, Ramsey et al. 2006, Colombo & Maathuis 2014) which are
//! *ambiguous* ([`Triple`]):
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
//!    R1 and R3 read the unshielded triple `c − a − b` (R3: `c − a − d`) as a non-collider; when
//!    that triple is ambiguous they do not fire (as pcalg's `udag2pdagRelaxed` with `unfVect`).
//!
//!    Without background knowledge R1–R3 are complete (Meek 1995, Thm. 2): R4 never fires.
//!
//! **CPDAG of a DAG**: its skeleton oriented with its own v-structures as the colliders.
//!
//! **d-separation** in a DAG ([`Pdag::d_separated`]) by the moral ancestral graph (Lauritzen et al.
//! 1990): `i ⫫ j | S` iff `S` separates `i` from `j` in the moralised graph of the ancestors of
//! `{i, j} ∪ S` — the oracle of the simulation study's test-by-test error counts.
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

/// The classification of an unshielded triple `i − k − j` by the orientation phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Triple {
    /// `i → k ← j`.
    Collider,
    /// Not a collider: Meek's rules may use it.
    NonCollider,
    /// The separating sets disagree: neither oriented nor used by Meek's rules.
    Ambiguous,
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
        Self::orient_triples(
            skeleton,
            |i, k, j| {
                if collider(i, k, j) { Triple::Collider } else { Triple::NonCollider }
            },
        )
    }

    /// [`Pdag::orient`] with a three-way classification of the unshielded triples `i − k − j`
    /// (`i < j`): ambiguous triples are not oriented and block R1 and R3 (module docs).
    pub fn orient_triples(
        skeleton: &Pdag,
        kind: impl Fn(usize, usize, usize) -> Triple,
    ) -> (Pdag, Vec<(usize, usize)>) {
        let mut arrows = BTreeSet::new();
        let mut ambiguous = BTreeSet::new();
        for (i, k, j) in skeleton.unshielded_triples() {
            match kind(i, k, j) {
                Triple::Collider => {
                    arrows.insert((i, k));
                    arrows.insert((j, k));
                }
                Triple::Ambiguous => {
                    ambiguous.insert((i, k, j));
                    ambiguous.insert((j, k, i));
                }
                Triple::NonCollider => {}
            }
        }
        let mut g = skeleton.skeleton();
        let mut frozen = BTreeSet::new();
        apply(&mut g, &arrows, &mut frozen);
        loop {
            let implied = meek_round(&g, &frozen, &ambiguous);
            if implied.is_empty() {
                break;
            }
            apply(&mut g, &implied, &mut frozen);
        }
        (g, frozen.into_iter().collect())
    }

    /// The unshielded triples `i − k − j` (`i`, `j` not adjacent) as `(i, k, j)` with `i < j`,
    /// ordered by `k`, then `i`, then `j`.
    pub fn unshielded_triples(&self) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        for k in 0..self.n {
            let nb = self.neighbours(k);
            for (x, &i) in nb.iter().enumerate() {
                for &j in &nb[x + 1..] {
                    if !self.adjacent(i, j) {
                        out.push((i, k, j));
                    }
                }
            }
        }
        out
    }

    /// Whether `i ⫫ j | s` in this graph read as a DAG (its directed edges; module docs).
    pub fn d_separated(&self, i: usize, j: usize, s: &[usize]) -> bool {
        let n = self.n;
        let parents = |v: usize| (0..n).filter(move |&u| self.directed(u, v));
        let mut anc = vec![false; n];
        let mut stack: Vec<usize> = [i, j].iter().chain(s).copied().collect();
        while let Some(v) = stack.pop() {
            if !anc[v] {
                anc[v] = true;
                stack.extend(parents(v));
            }
        }
        let mut moral = vec![vec![false; n]; n];
        for v in (0..n).filter(|&v| anc[v]) {
            let ps: Vec<usize> = parents(v).collect();
            for (a, &p) in ps.iter().enumerate() {
                moral[p][v] = true;
                moral[v][p] = true;
                for &q in &ps[a + 1..] {
                    moral[p][q] = true;
                    moral[q][p] = true;
                }
            }
        }
        let mut seen = vec![false; n];
        let mut stack = vec![i];
        while let Some(v) = stack.pop() {
            if v == j {
                return false;
            }
            if seen[v] || s.contains(&v) {
                continue;
            }
            seen[v] = true;
            stack.extend((0..n).filter(|&u| anc[u] && moral[v][u] && !seen[u]));
        }
        true
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
fn meek_round(
    g: &Pdag,
    frozen: &BTreeSet<(usize, usize)>,
    ambiguous: &BTreeSet<(usize, usize, usize)>,
) -> BTreeSet<(usize, usize)> {
    let n = g.n;
    let mut out = BTreeSet::new();
    for a in 0..n {
        for b in 0..n {
            if a == b || !g.undirected(a, b) || frozen.contains(&(a.min(b), a.max(b))) {
                continue;
            }
            let r1 = (0..n)
                .any(|c| g.directed(c, a) && c != b && !g.adjacent(c, b) && !ambiguous.contains(&(c, a, b)));
            let r2 = (0..n).any(|c| g.directed(a, c) && g.directed(c, b));
            let r3 = || {
                let cs: Vec<usize> = (0..n).filter(|&c| g.undirected(a, c) && g.directed(c, b)).collect();
                cs.iter().enumerate().any(|(i, &c)| {
                    cs[i + 1..].iter().any(|&d| !g.adjacent(c, d) && !ambiguous.contains(&(c, a, d)))
                })
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

    /// An ambiguous triple is not oriented and stops R1 from propagating through it.
    #[test]
    fn ambiguous_triples_block_r1() {
        // skeleton 0 − 2 − 1, 2 − 3; 0 → 2 ← 1 a collider would orient 2 → 3 by R1.
        let mut s = Pdag::empty(4);
        for (a, b) in [(0, 2), (1, 2), (2, 3)] {
            s.add_undirected(a, b);
        }
        let (g, _) = Pdag::orient_triples(&s, |i, _, j| match (i, j) {
            (0, 1) => Triple::Collider,
            _ => Triple::NonCollider,
        });
        assert!(g.directed(0, 2) && g.directed(1, 2) && g.directed(2, 3));
        // the triple 0 − 2 − 3 ambiguous: R1 may still fire from 1 → 2 (1 − 2 − 3 is a non-collider)
        let (g, _) = Pdag::orient_triples(&s, |i, _, j| match (i, j) {
            (0, 1) => Triple::Collider,
            (0, 3) => Triple::Ambiguous,
            _ => Triple::NonCollider,
        });
        assert!(g.directed(2, 3));
        // both 0 − 2 − 3 and 1 − 2 − 3 ambiguous: 2 − 3 stays undirected
        let (g, _) = Pdag::orient_triples(&s, |i, _, j| match (i, j) {
            (0, 1) => Triple::Collider,
            _ => Triple::Ambiguous,
        });
        assert!(g.directed(0, 2) && g.undirected(2, 3));
        // all ambiguous: nothing is oriented
        let (g, c) = Pdag::orient_triples(&s, |_, _, _| Triple::Ambiguous);
        assert_eq!(g, s);
        assert!(c.is_empty());
    }

    /// d-separation against hand-derived answers on the collider-chain 0 → 2 ← 1, 2 → 3.
    #[test]
    fn d_separation_by_hand() {
        let g = Pdag::from_directed(4, &[(0, 2), (1, 2), (2, 3)]);
        assert!(g.d_separated(0, 1, &[]));
        assert!(!g.d_separated(0, 1, &[2]), "conditioning on a collider connects");
        assert!(!g.d_separated(0, 1, &[3]), "and on its descendant");
        assert!(g.d_separated(0, 3, &[2]) && !g.d_separated(0, 3, &[]));
        assert!(!g.d_separated(0, 2, &[1, 3]), "adjacent nodes are never separated");
        assert_eq!(g.unshielded_triples(), vec![(0, 2, 1), (0, 2, 3), (1, 2, 3)]);
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

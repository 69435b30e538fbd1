//! Oracles for the PC algorithm: with d-separation in a known DAG as the independence test it must
//! return that DAG's CPDAG exactly (Spirtes et al. 2000, Thm. 5.1); with the kernel test, results
//! must not depend on the thread count.

use super::*;
use crate::Points;
use crate::causal::CiMethod;
use crate::hypothesis::hsic::HsicParams;
use crate::hypothesis::{LengthscaleSelection, MedianConvention};
use bke_linalg::DefaultBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// d-separation in a known DAG ([`Pdag::d_separated`], checked by hand in the graph module's tests)
/// as the independence test.
struct DSeparation(Pdag);

impl IndependenceTest for DSeparation {
    fn prefetch(&self, _: &[(usize, Vec<usize>)]) -> Result<(), CoreError> {
        Ok(())
    }
    fn test(&self, i: usize, j: usize, s: &[usize]) -> Result<CiOutcome, CoreError> {
        let p_value = if self.0.d_separated(i, j, s) { 1.0 } else { 0.0 };
        Ok(CiOutcome { p_value, statistic: 0.0, lengthscales: [1.0, 1.0] })
    }
}

fn random_dag(n: usize, prob: f64, rng: &mut ChaCha8Rng) -> Vec<(usize, usize)> {
    let order: Vec<usize> = {
        let mut o: Vec<usize> = (0..n).collect();
        for k in (1..n).rev() {
            o.swap(k, rng.random_range(0..=k));
        }
        o
    };
    let mut edges = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            if rng.random::<f64>() < prob {
                edges.push((order[a], order[b]));
            }
        }
    }
    edges
}

#[test]
fn oracle_pc_recovers_the_cpdag_of_random_dags() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for trial in 0..60 {
        let n = 3 + trial % 6;
        let edges = random_dag(n, 0.4, &mut rng);
        let oracle = DSeparation(Pdag::from_directed(n, &edges));
        let truth = oracle.0.cpdag();
        for rule in Orientation::ALL {
            let found = search(&oracle, n, 0.05, None, rule, &()).unwrap();
            let g = found.cpdag;
            assert_eq!(
                g,
                truth,
                "trial {trial}, {rule:?}: dag {edges:?}\nfound {:?}\ntruth {:?}",
                g.edges(),
                truth.edges()
            );
            assert!(found.conflicts.is_empty());
            assert!(found.triples.iter().all(|d| d.kind != Triple::Ambiguous));
            assert_eq!(
                found.orientation_tests.is_empty(),
                rule == Orientation::Standard || found.triples.is_empty()
            );
        }
    }
}

#[test]
fn subsets_are_lexicographic() {
    assert_eq!(subsets(&[4, 7, 9], 2), vec![vec![4, 7], vec![4, 9], vec![7, 9]]);
    assert_eq!(subsets(&[4, 7], 0), vec![Vec::<usize>::new()]);
    assert!(subsets(&[4], 2).is_empty());
    let adj = vec![vec![1, 2], vec![0, 2, 3], vec![0, 1], vec![1]];
    assert_eq!(conditioning_sets(&adj, 0, 1, 1), vec![vec![2], vec![3]]);
}

/// Data from 0 → 2 ← 1, 2 → 3 (nonlinear, uniform noise).
fn collider_data(n: usize) -> CausalData {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut u = || rng.random::<f64>() * 2.0 - 1.0;
    let mut v = Vec::new();
    for _ in 0..n {
        let (a, b) = (2.0 * u(), 2.0 * u());
        let c = a.sin() + 0.5 * b * b + 0.3 * u();
        let d = (1.5 * c).tanh() * 2.0 + 0.3 * u();
        v.extend([a, b, c, d]);
    }
    let names = ["a", "b", "c", "d"].map(String::from).to_vec();
    CausalData::new(names, Points::new("v", v, 4).unwrap(), None).unwrap()
}

/// gp-hsic with the median heuristic and 200 permutations: these tests check PC's mechanics. (On
/// this collider the KCI default removes `a − c` given `d`, p ≈ 0.09: `d = 2 tanh 1.5c + e` is
/// nearly a function of `c`, and every CI test here is close to the level; the CLI tests run PC with
/// KCI and RCIT on three of its variables.)
fn quick() -> PcParams {
    let mut p = PcParams::default();
    p.ci.method = CiMethod::GpHsic;
    p.ci.selection = LengthscaleSelection::median(MedianConvention::Muandet);
    p.ci.hsic = HsicParams { permutations: 200, ..Default::default() };
    p
}

#[test]
fn kernel_pc_finds_a_collider_and_is_thread_count_invariant() {
    let data = collider_data(200);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| quick().check().unwrap().fit::<DefaultBackend>(&data).unwrap())
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(one, two);
    assert!(one.directed("a", "c") && one.directed("b", "c") && one.directed("c", "d"), "{:?}", one.edges);
    assert_eq!(one.edges.len(), 3);
    assert_eq!(one.separating_sets.len(), 3);
    assert_eq!(one.prewhitening.method, "none");
    let json = serde_json::to_value(&one).unwrap();
    for key in ["nodes", "edges", "tests", "alpha", "selection"] {
        assert!(json.get(key).is_some(), "{key}");
    }
    let t = &json["tests"][0];
    for key in ["x", "y", "given", "p_value", "lengthscales"] {
        assert!(t.get(key).is_some(), "{key}");
    }
    let back: PcResult = serde_json::from_value(json).unwrap();
    assert_eq!(back.graph(), one.graph());
    // limited conditioning: level 0 only keeps a − d, b − d (dependent through c)
    let lim =
        PcParams { max_condition: Some(0), ..quick() }.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    assert!(lim.adjacent("a", "d") && lim.tests.iter().all(|t| t.level == 0));
}

#[test]
fn settings_are_checked() {
    assert!(PcParams { alpha: 1.5, ..quick() }.check().is_err());
    let data = collider_data(30);
    let t = quick().ci.check().unwrap().fit::<DefaultBackend>(data.values()).unwrap();
    assert!(pc::<DefaultBackend>(&t, &["a".into()], 0.05, None, &()).is_err());
}

/// A binary cause (a treatment indicator: most pairs of its values coincide, so the median
/// heuristic takes the median of the positive distances) in the chain `t → x → y`, with the
/// default test: the skeleton `t − x − y` and no collider. A constant variable is refused by name.
#[test]
fn a_binary_variable_takes_part_and_a_constant_one_is_refused() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut v = Vec::new();
    for _ in 0..300 {
        let t = if rng.random::<f64>() < 0.4 { 1.0 } else { 0.0 };
        let x = t + rng.sample::<f64, _>(rand_distr::StandardNormal);
        let y = x.sin() + 0.3 * rng.sample::<f64, _>(rand_distr::StandardNormal);
        v.extend([t, x, y]);
    }
    let names = ["t", "x", "y"].map(String::from).to_vec();
    let data = CausalData::new(names.clone(), Points::new("v", v.clone(), 3).unwrap(), None).unwrap();
    let found = PcParams::default().check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    assert!(
        found.adjacent("t", "x") && found.adjacent("x", "y") && !found.adjacent("t", "y"),
        "{:?}",
        found.edges
    );
    assert!(!found.directed("t", "x") && !found.directed("y", "x"), "{:?}", found.edges);
    v.iter_mut().skip(2).step_by(3).for_each(|y| *y = 2.5);
    let e = CausalData::new(names, Points::new("v", v, 3).unwrap(), None).unwrap_err().to_string();
    assert!(e.contains("variable 'y'") && e.contains("constant"), "{e}");
}

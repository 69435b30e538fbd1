//! Property tests over parameter validation: no parameter value, however extreme (0, `usize::MAX`,
//! NaN, ±∞, negative, huge), reaches a panic or an allocation failure. Validation answers `Ok` or an
//! error naming the parameter; settings that pass and are small enough to run are fitted on a
//! small data set, which answers `Ok` or an error too.

use bke_core::bayes::SampleParams;
use bke_core::embedding::{EmbeddingParams, EmbeddingPrior};
use bke_core::hypothesis::LengthscaleSelection;
use bke_core::hypothesis::mmd::MmdParams;
use bke_core::nuts::NutsParams;
use bke_core::{BkeParams, Params, Points, TwoSamples};
use bke_linalg::DefaultBackend;
use proptest::prelude::*;

/// Counts as a careless or hostile user types them.
fn count() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..6, Just(usize::MAX), Just(1usize << 40), Just(1_000_000_000_000), 0usize..100_000]
}

/// Reals: ordinary, tiny, huge, negative, non-finite.
fn real() -> impl Strategy<Value = f64> {
    prop_oneof![
        -10.0f64..10.0,
        Just(0.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(1e300),
        Just(1e-300),
        Just(-1e-300),
        Just(f64::MIN_POSITIVE / 2.0),
    ]
}

fn data() -> Points {
    let rows: Vec<Vec<f64>> = (0..12).map(|i| vec![(i as f64 * 0.9).sin(), (i as f64 * 0.4).cos()]).collect();
    Points::from_rows("x", &rows).unwrap()
}

fn nuts(chains: usize, warmup: usize, draws: usize, depth: usize, accept: f64, step: f64) -> NutsParams {
    NutsParams {
        chains,
        warmup,
        draws,
        max_depth: depth,
        target_accept: accept,
        initial_step_size: step,
        ..NutsParams::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn nuts_and_sampling_params_never_panic(
        chains in count(), warmup in count(), draws in count(), depth in count(),
        accept in real(), step in real(), m in count(),
    ) {
        let params = nuts(chains, warmup, draws, depth, accept, step);
        if params.validate().is_ok() && chains <= 2 && warmup <= 5 && draws <= 5 && depth <= 4 {
            let s = SampleParams { nuts: params, num_landmarks: m.min(1 << 20), ..SampleParams::default() };
            if s.validate().is_ok() {
                let _ = s.check().unwrap().fit::<DefaultBackend>(&data());
            }
        }
    }

    #[test]
    fn embedding_params_never_panic(
        grid_points in count(), starts in count(), m in count(), tau2 in real(), eta in real(),
    ) {
        let params = EmbeddingParams {
            grid_points,
            max_starts: starts,
            num_landmarks: m,
            tau2,
            prior: EmbeddingPrior::Gaussian { eta },
            ..EmbeddingParams::default()
        };
        if params.validate().is_ok() && grid_points <= 5 {
            let _ = params.check().unwrap().fit::<DefaultBackend>(&data());
        }
    }

    #[test]
    fn posterior_params_never_panic(l1 in real(), l2 in real(), tau2 in real()) {
        let params = BkeParams::new(vec![l1, l2], tau2);
        if params.validate().is_ok() {
            if let Ok(post) = params.check().unwrap().fit::<DefaultBackend>(&data()) {
                let _ = post.sample::<DefaultBackend>(&data(), 3, 0);
            }
        }
    }

    #[test]
    fn test_params_never_panic(permutations in count(), alpha in real(), lengthscale in real()) {
        let selection = LengthscaleSelection::fixed(lengthscale);
        let params = MmdParams { permutations, alpha, selection, ..MmdParams::default() };
        if let (true, Ok(valid)) = (permutations <= 50, params.check()) {
            let x = data();
            if let Ok(fitted) = valid.fit::<DefaultBackend>(&TwoSamples { x: x.clone(), y: x }) {
                let _ = fitted.test::<DefaultBackend>();
            }
        }
    }
}

#[test]
fn huge_counts_are_refused_naming_the_setting_not_aborted() {
    let e = nuts(4, 10, usize::MAX, 10, 0.8, 1.0).validate().unwrap_err().to_string();
    assert!(e.contains("draws = 18446744073709551615") && e.contains("--max-memory"), "{e}");
    let e = EmbeddingParams { grid_points: 1 << 50, ..EmbeddingParams::default() }.validate().unwrap_err();
    assert!(e.to_string().contains("grid_points"), "{e}");
    let e = MmdParams { permutations: usize::MAX, ..MmdParams::default() }.check().unwrap_err();
    assert!(e.to_string().contains("permutations"), "{e}");
}

//! The kernel families of bke and their evaluation, used by the embeddings, the tests, the density
//! estimator and the DME: the stationary kernels ([`KernelFamily`], [`Kernel`]); the kernels of
//! a distance that the tests weight and aggregate ([`TestFamily`], [`WeightedKernel`], Gram matrices
//! from shared distances: [`Distances`]); and kernels given by a feature map, with the pull-back
//! Jacobian the density estimator needs ([`DensityKernel`], [`Polynomial`]).
//!
//! The stationary families, their profiles and derivatives are tabulated in `kernel/stationary.rs`.

mod distance;
mod feature_map;
mod stationary;

pub use distance::{Distances, TestFamily, WeightedKernel};
pub use feature_map::{DensityKernel, Polynomial};
pub use stationary::{Kernel, KernelFamily};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Points;

    fn families() -> Vec<KernelFamily> {
        vec![
            KernelFamily::SquaredExponential,
            KernelFamily::Laplace,
            KernelFamily::Matern32,
            KernelFamily::Matern52,
            KernelFamily::RationalQuadratic { alpha: 0.7 },
        ]
    }

    #[test]
    fn unit_amplitude_and_known_values() {
        for fam in families() {
            let k = Kernel::new(fam, vec![1.3]).unwrap();
            assert!((k.eval(&[0.2, 1.0], &[0.2, 1.0]) - 1.0).abs() < 1e-15);
        }
        let se = Kernel::se(2.0).unwrap();
        assert!((se.eval(&[0.0], &[2.0]) - (-0.5f64).exp()).abs() < 1e-15);
        let lap = Kernel::new(KernelFamily::Laplace, vec![2.0]).unwrap();
        assert!((lap.eval(&[0.0], &[2.0]) - (-1.0f64).exp()).abs() < 1e-15);
        let m32 = Kernel::new(KernelFamily::Matern32, vec![1.0]).unwrap();
        let s3 = 3f64.sqrt();
        assert!((m32.eval(&[0.0], &[1.0]) - (1.0 + s3) * (-s3).exp()).abs() < 1e-15);
    }

    /// Central finite differences of every derivative, for every family, iso and ARD.
    #[test]
    fn derivatives_match_finite_differences() {
        let x = [0.3, -1.2, 0.7];
        let y = [1.1, -0.4, -0.2];
        let h = 1e-6;
        for fam in families() {
            for ls in [vec![0.9], vec![0.8, 1.7, 0.5]] {
                let k = Kernel::new(fam, ls).unwrap();
                let mut g = vec![0.0; k.n_params()];
                k.eval_grad_params(&x, &y, &mut g);
                let p = k.log_params();
                for i in 0..p.len() {
                    let mut pp = p.clone();
                    pp[i] += h;
                    let up = k.with_log_params(&pp).unwrap().eval(&x, &y);
                    pp[i] -= 2.0 * h;
                    let dn = k.with_log_params(&pp).unwrap().eval(&x, &y);
                    let fd = (up - dn) / (2.0 * h);
                    assert!(
                        (fd - g[i]).abs() <= 1e-6 * (1.0 + fd.abs()),
                        "{} param {i}: {fd} vs {}",
                        fam.name(),
                        g[i]
                    );
                }
                let mut gx = [0.0; 3];
                k.eval_grad_x(&x, &y, &mut gx);
                for d in 0..3 {
                    let (mut xp, mut xm) = (x, x);
                    xp[d] += h;
                    xm[d] -= h;
                    let fd = (k.eval(&xp, &y) - k.eval(&xm, &y)) / (2.0 * h);
                    assert!(
                        (fd - gx[d]).abs() <= 1e-6 * (1.0 + fd.abs()),
                        "{} dx{d}: {fd} vs {}",
                        fam.name(),
                        gx[d]
                    );
                }
            }
        }
    }

    #[test]
    fn family_names_round_trip() {
        for fam in families().into_iter().chain([KernelFamily::RationalQuadratic { alpha: 1.0 }]) {
            assert_eq!(fam.spec().parse::<KernelFamily>().unwrap(), fam);
        }
        assert_eq!("RBF".parse::<KernelFamily>().unwrap(), KernelFamily::SquaredExponential);
        for bad in ["", "rq:", "rq:-1", "rq:nan", "cubic"] {
            let e = bad.parse::<KernelFamily>().unwrap_err().to_string();
            assert!(e.contains("use se, laplace"), "{bad}: {e}");
        }
    }

    #[test]
    fn gram_is_symmetric_and_validates() {
        let xs = Points::from_rows("x", &[vec![0.0, 1.0], vec![2.0, -1.0], vec![0.5, 0.5]]).unwrap();
        let k = Kernel::se_ard(vec![1.0, 2.0]).unwrap();
        let g = k.gram(&xs).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                assert_eq!(g[(i, j)], g[(j, i)]);
            }
        }
        assert!(Kernel::se_ard(vec![1.0, 2.0, 3.0]).unwrap().gram(&xs).is_err());
        assert!(Kernel::se(0.0).is_err());
        assert!(Kernel::se(f64::NAN).is_err());
        assert!(Kernel::new(KernelFamily::RationalQuadratic { alpha: -1.0 }, vec![1.0]).is_err());
    }
}

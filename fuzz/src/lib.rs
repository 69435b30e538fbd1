//! The entry points the fuzz targets (`fuzz/fuzz_targets/*.rs`) and the corpus replay
//! (`bke-cli/tests/cli/fuzz_corpus.rs`) share: each takes arbitrary bytes and must return without a
//! panic, an abort or a hang; errors are the expected answer to bad input.
//!
//! The CSV and `.npy` readers fuzzed are the ones the CLI uses (`bke_io::CsvTable`,
//! `bke_io::npy`); the model files are those of every kind bke writes (BaNK, the RKS/MKL
//! baselines, the kernel student-t density, the TTGP and the TTBLR of bke-dme). This
//! library needs no libFuzzer: the targets need the `libfuzzer` feature (on by default), and the
//! replay test uses the library with default features off.

use bke_bank::baselines::BaselineModel;
use bke_bank::{BankModel, BankParams};
use bke_core::density::KernelStudentT;
use bke_core::embedding::EmbeddingParams;
use bke_core::hypothesis::mmd::MmdParams;
use bke_core::model_file::from_str;
use bke_core::nuts::NutsParams;
use bke_core::{LogDensity, Params, Points, Predict};
use bke_dme::ttblr::Ttblr;
use bke_dme::ttgp::Ttgp;
use bke_linalg::Faer;

/// Selects every column of a table that was read, and the first one by name.
fn select(table: &bke_io::CsvTable) {
    let _ = table.points(None);
    if let Some(first) = table.names.first() {
        let _ = table.points(Some(std::slice::from_ref(first)));
    }
}

/// The CSV reader: parse, select every column and the first one by name.
pub fn csv_reader(data: &[u8]) {
    if let Ok(table) = bke_io::CsvTable::from_bytes(data, "fuzz.csv".into()) {
        select(&table);
    }
}

/// The `.npy` reader (the whole-file one, `bke_io::npy::parse`; the chunked reader of the
/// streaming commands is replayed through the CLI): parse the header and the data, select every
/// column and the first one by name.
pub fn npy_reader(data: &[u8]) {
    if let Ok(table) = bke_io::npy::parse(data, "fuzz.npy".into()) {
        select(&table);
    }
}

/// The model-file readers: every kind; a file that loads must also predict without a panic.
pub fn model_files(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let probe =
        |dim: usize| Points::new("q", (0..3 * dim).map(|i| i as f64 * 0.3 - 0.5).collect(), dim.max(1));
    if let Ok(saved) = from_str::<BankModel>(text, "fuzz.json") {
        if let Ok(q) = probe(saved.model.dim) {
            let _ = saved.model.predict::<Faer>(&q);
        }
    }
    if let Ok(saved) = from_str::<KernelStudentT>(text, "fuzz.json") {
        if let Ok(q) = probe(saved.model.dim()) {
            let _ = saved.model.log_density::<Faer>(&q);
        }
    }
    if let Ok(saved) = from_str::<BaselineModel>(text, "fuzz.json") {
        if let Ok(q) = probe(saved.model.inputs.shift.len()) {
            let _ = saved.model.predict_mean::<Faer>(&q);
        }
    }
    if let Ok(saved) = from_str::<Ttgp>(text, "fuzz.json") {
        if let Ok(q) = probe(saved.model.data().x.dim()) {
            let _ = saved.model.predict::<Faer>(&q);
            let _ = saved.model.log_marginal::<Faer>();
        }
    }
    if let Ok(saved) = from_str::<Ttblr>(text, "fuzz.json") {
        if let Ok(q) = probe(saved.model.features().dim()) {
            let _ = saved.model.predict::<Faer>(&q);
        }
    }
}

/// Reads little-endian words from the input (zeros after the end).
struct Words<'a>(&'a [u8]);

impl Words<'_> {
    fn u64(&mut self) -> u64 {
        let n = self.0.len().min(8);
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        u64::from_le_bytes(b)
    }
    /// A count: small values mostly, any `usize` sometimes.
    fn count(&mut self) -> usize {
        let w = self.u64();
        if w & 1 == 0 { (w >> 1) as usize % 64 } else { (w >> 1) as usize }
    }
    fn real(&mut self) -> f64 {
        f64::from_bits(self.u64())
    }
}

/// Argument → parameters validation: parameter structs built from arbitrary words (any count up
/// to `usize::MAX`, any bit pattern of `f64`) must validate to `Ok` or an error.
pub fn params(data: &[u8]) {
    let mut w = Words(data);
    let nuts = NutsParams {
        chains: w.count(),
        warmup: w.count(),
        draws: w.count(),
        max_depth: w.count(),
        target_accept: w.real(),
        initial_step_size: w.real(),
        init_radius: w.real(),
        ..NutsParams::default()
    };
    let _ = nuts.validate();
    let embedding = EmbeddingParams {
        grid_points: w.count(),
        max_starts: w.count(),
        num_landmarks: w.count(),
        tau2: w.real(),
        ..EmbeddingParams::default()
    };
    let _ = embedding.validate();
    let mmd = MmdParams { permutations: w.count(), alpha: w.real(), ..MmdParams::default() };
    let _ = mmd.check();
    let bank = BankParams {
        frequencies: w.count(),
        iterations: w.count(),
        samples: w.count(),
        block: w.count(),
        ..BankParams::default()
    };
    let _ = bank.validate();
}

//! Latency samples → percentiles, as JSON objects with stable keys.

use std::time::Duration;

use serde_json::{json, Value};

use crate::round;

/// Percentiles of a set of samples, in microseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    pub count: usize,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

impl Summary {
    pub fn of(samples: &[Duration]) -> Summary {
        if samples.is_empty() {
            return Summary::default();
        }
        let mut micros: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        micros.sort_by(f64::total_cmp);
        let at = |q: f64| {
            let index = ((micros.len() as f64 - 1.0) * q).round() as usize;
            micros[index.min(micros.len() - 1)]
        };
        Summary {
            count: micros.len(),
            p50_us: at(0.50),
            p90_us: at(0.90),
            p99_us: at(0.99),
            min_us: micros[0],
            max_us: micros[micros.len() - 1],
            mean_us: micros.iter().sum::<f64>() / micros.len() as f64,
        }
    }

    pub fn to_json(self) -> Value {
        json!({
            "count": self.count,
            "p50_us": round(self.p50_us, 1),
            "p90_us": round(self.p90_us, 1),
            "p99_us": round(self.p99_us, 1),
            "min_us": round(self.min_us, 1),
            "max_us": round(self.max_us, 1),
            "mean_us": round(self.mean_us, 1),
        })
    }
}

/// Median of a few numbers (repetitions of a whole measurement): the
/// middle one, or the mean of the two middle ones.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    }
}

/// A distribution-free confidence interval for the median of `values`,
/// taken as independent draws: the order statistics `k` and `n + 1 - k`
/// whose coverage, by the binomial distribution with p = ½, is at least
/// `confidence`. `None` with too few values for that confidence (fewer
/// than 6 for 95 %).
pub fn median_interval(values: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let n = values.len();
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    // `k` is the largest rank with P(X < k) <= tail, X ~ Binomial(n, ½);
    // the probabilities go in log space (½ⁿ underflows past n ≈ 1,000).
    let mut ln_pmf = n as f64 * 0.5f64.ln();
    let mut below = 0.0;
    let mut k = 0;
    for j in 0..n {
        below += ln_pmf.exp();
        if below > tail {
            break;
        }
        k = j + 1;
        ln_pmf += ((n - j) as f64).ln() - ((j + 1) as f64).ln();
    }
    if k == 0 || k > n - k + 1 {
        return None;
    }
    Some((sorted[k - 1], sorted[n - k]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn median_intervals_take_the_binomial_ranks() {
        let ramp = |n: usize| (1..=n).rev().map(|i| i as f64).collect::<Vec<f64>>();
        // Five values cannot give 95 %: even (min, max) covers 93.75 %.
        assert_eq!(median_interval(&ramp(5), 0.95), None);
        assert_eq!(median_interval(&ramp(5), 0.90), Some((1.0, 5.0)));
        assert_eq!(median_interval(&ramp(6), 0.95), Some((1.0, 6.0)));
        // The tables' ranks for 20 and 100 values at 95 %: 6 and 15, 40 and 61.
        assert_eq!(median_interval(&ramp(20), 0.95), Some((6.0, 15.0)));
        assert_eq!(median_interval(&ramp(100), 0.95), Some((40.0, 61.0)));
        assert_eq!(median_interval(&[], 0.95), None);
    }

    #[test]
    fn percentiles_of_a_ramp() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        let summary = Summary::of(&samples);
        assert_eq!(summary.count, 100);
        assert!((summary.p50_us - 50.0).abs() <= 1.0);
        assert!((summary.p99_us - 99.0).abs() <= 1.0);
        assert_eq!(Summary::of(&[]).count, 0);
    }
}

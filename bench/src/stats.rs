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

/// Median of a few numbers (repetitions of a whole measurement).
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

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

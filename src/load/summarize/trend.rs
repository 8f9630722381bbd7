//! Ordinary least squares of `y` on `x`: the slope, the intercept and the
//! coefficient of determination (R², the share of `y`'s variance the line
//! explains).

/// A fitted line `y = intercept + slope · x`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// Change of `y` per unit of `x`.
    pub slope: f64,
    /// `y` at `x = 0`.
    pub intercept: f64,
    /// R² in [0, 1]; `None` when `y` never varies (a flat line fits, and
    /// there is no variance to explain).
    pub r2: Option<f64>,
    /// Points fitted.
    pub n: usize,
}

/// Fits `points` (`(x, y)`); `None` with fewer than 3 points or when every
/// `x` is the same (no slope is defined).
pub fn least_squares(points: &[(f64, f64)]) -> Option<Fit> {
    let n = points.len();
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / nf;
    let my = points.iter().map(|p| p.1).sum::<f64>() / nf;
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for &(x, y) in points {
        let (dx, dy) = (x - mx, y - my);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if sxx <= 0.0 || !sxx.is_finite() || !syy.is_finite() {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = (syy > 0.0).then(|| (sxy * sxy / (sxx * syy)).clamp(0.0, 1.0));
    Some(Fit {
        slope,
        intercept: my - slope * mx,
        r2,
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn an_exact_line_is_recovered_with_a_perfect_fit() {
        let pts: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 3.0 + 2.5 * i as f64)).collect();
        let f = least_squares(&pts).unwrap();
        assert!(close(f.slope, 2.5) && close(f.intercept, 3.0), "{f:?}");
        assert!(close(f.r2.unwrap(), 1.0));
        assert_eq!(f.n, 10);
        let down: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x, -y)).collect();
        let f = least_squares(&down).unwrap();
        assert!(close(f.slope, -2.5) && close(f.r2.unwrap(), 1.0));
    }

    #[test]
    fn known_data_give_the_textbook_slope_and_r2() {
        // x = 1..5, y = 2, 4, 5, 4, 5: slope 0.6, intercept 2.2, R² 0.6.
        let pts = [(1.0, 2.0), (2.0, 4.0), (3.0, 5.0), (4.0, 4.0), (5.0, 5.0)];
        let f = least_squares(&pts).unwrap();
        assert!(close(f.slope, 0.6), "{f:?}");
        assert!(close(f.intercept, 2.2), "{f:?}");
        assert!(close(f.r2.unwrap(), 0.6), "{f:?}");
    }

    #[test]
    fn noise_without_a_trend_fits_poorly() {
        // Alternating up and down around 100: slope near 0, R² near 0.
        let pts: Vec<(f64, f64)> = (0..20)
            .map(|i| (i as f64, if i % 2 == 0 { 101.0 } else { 99.0 }))
            .collect();
        let f = least_squares(&pts).unwrap();
        assert!(f.slope.abs() < 0.05, "{f:?}");
        assert!(f.r2.unwrap() < 0.05, "{f:?}");
    }

    #[test]
    fn flat_data_have_no_r2_and_degenerate_data_no_fit() {
        let flat = [(0.0, 7.0), (1.0, 7.0), (2.0, 7.0)];
        let f = least_squares(&flat).unwrap();
        assert_eq!((f.slope, f.r2), (0.0, None));
        assert_eq!(least_squares(&[(0.0, 1.0), (1.0, 2.0)]), None, "two points");
        assert_eq!(
            least_squares(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]),
            None,
            "one x"
        );
    }
}

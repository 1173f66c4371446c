# Reference values of ROBPCA (Hubert, Rousseeuw & Vanden Branden 2005) from
# rrcov::PcaHubert, for tests/robust/test_robpca.py (the tests need no R).
#
#   Rscript robpca_make.R        (writes robpca_reference.json beside this file)
#
# Made with R 4.2.2, rrcov 1.7-2 and jsonlite (Debian: r-cran-rrcov r-cran-jsonlite). The data have
# p = 12 > min(n / 5, kmax = 10) variables, so PcaHubert takes the projection-pursuit
# path (outlyingness -> h-subset -> subspace -> C-steps and MCD in the subspace), and
# maxdir = choose(n, 2): every direction through two points is used (no sampling).
suppressMessages(library(rrcov))
set.seed(20260101)
n <- 60; p <- 12; k <- 3
make_case <- function(n, p, n_orth, n_lev) {
  scores <- matrix(rnorm(n * 3), n, 3) %*% diag(c(5, 3, 2))
  basis <- qr.Q(qr(matrix(rnorm(p * 3), p, 3)))
  X <- scores %*% t(basis) + matrix(rnorm(n * p, sd = 0.4), n, p)
  X <- sweep(X, 2, seq_len(p) / 4, "+")
  out <- n - n_orth - n_lev
  if (n_orth > 0) {  # orthogonal outliers: moved off the subspace
    off <- rnorm(p); off <- off - basis %*% crossprod(basis, off); off <- off / sqrt(sum(off^2))
    X[(out + 1):(out + n_orth), ] <- X[(out + 1):(out + n_orth), ] +
      8 * matrix(rep(off, n_orth), n_orth, p, byrow = TRUE)
  }
  if (n_lev > 0) {  # bad leverage points: far along the subspace and off it
    rows <- (n - n_lev + 1):n
    X[rows, ] <- X[rows, ] + matrix(rep(20 * basis[, 3] + 5 * rnorm(p) / sqrt(p), n_lev),
                                    n_lev, p, byrow = TRUE)
  }
  X
}
fit_case <- function(X, k, alpha) {
  fit <- PcaHubert(X, k = k, alpha = alpha, maxdir = choose(nrow(X), 2))
  list(X = unname(X), k = k, alpha = alpha, quan = fit@quan,
       loadings = unname(getLoadings(fit)), eigenvalues = unname(getEigenvalues(fit)),
       center = unname(getCenter(fit)), scores = unname(getScores(fit)),
       sd = unname(fit@sd), od = unname(fit@od), cutoff_sd = fit@cutoff.sd,
       cutoff_od = fit@cutoff.od, flag = unname(fit@flag))
}
cases <- list(
  contaminated = fit_case(make_case(n, p, 5, 5), k, 0.75),
  clean = fit_case(make_case(n, p, 0, 0), k, 0.75),
  alpha_0.6 = fit_case(make_case(n, p, 4, 4), 2, 0.6)
)
cases$versions <- list(R = R.version.string, rrcov = as.character(packageVersion("rrcov")))
jsonlite::write_json(cases, "robpca_reference.json", digits = NA, auto_unbox = TRUE,
                     matrix = "rowmajor", pretty = FALSE)

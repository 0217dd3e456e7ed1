# Writes the R datasets of the sklearn-pipelines meta-dataset as CSV tables, for
# data/prep/dataset_samples/export_samples.py. Usage: Rscript export_r_tables.R OUT_DIR
# For each task: OUT_DIR/<task>.csv (header; NA as an empty cell; factors as their labels) and
# OUT_DIR/<task>.kinds (one line per column: numeric or categorical). Factors are categorical,
# ordered factors with numeric levels numeric, Date and POSIXct columns dropped (the
# meta-dataset's README, "Datasets").
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 1) stop("usage: Rscript export_r_tables.R OUT_DIR")
out <- args[[1]]
dir.create(out, showWarnings = FALSE, recursive = TRUE)

tasks <- list(
  c("MASS_birthwt", "MASS", "birthwt"),
  c("THdata_GlaucomaM", "TH.data", "GlaucomaM"),
  c("kernlab_musk", "kernlab", "musk"),
  c("kernlab_promotergene", "kernlab", "promotergene"),
  c("kernlab_spam", "kernlab", "spam"),
  c("mlbench_DNA", "mlbench", "DNA"),
  c("mlbench_Glass", "mlbench", "Glass"),
  c("mlbench_HouseVotes84", "mlbench", "HouseVotes84"),
  c("mlbench_LetterRecognition", "mlbench", "LetterRecognition"),
  c("mlbench_PimaIndiansDiabetes2", "mlbench", "PimaIndiansDiabetes2"),
  c("mlbench_Satellite", "mlbench", "Satellite"),
  c("mlbench_Shuttle", "mlbench", "Shuttle"),
  c("mlbench_Sonar", "mlbench", "Sonar"),
  c("mlbench_Soybean", "mlbench", "Soybean"),
  c("mlbench_Vehicle", "mlbench", "Vehicle"),
  c("mlbench_Zoo", "mlbench", "Zoo"),
  c("modeldata_attrition", "modeldata", "attrition"),
  c("modeldata_bivariate", "modeldata", "bivariate"),
  c("modeldata_cells", "modeldata", "cells"),
  c("modeldata_credit_data", "modeldata", "credit_data"),
  c("modeldata_hpc_data", "modeldata", "hpc_data"),
  c("modeldata_mlc_churn", "modeldata", "mlc_churn"),
  c("modeldata_oils", "modeldata", "oils"),
  c("modeldata_scat", "modeldata", "scat"),
  c("modeldata_stackoverflow", "modeldata", "stackoverflow")
)

load_table <- function(package, name) {
  env <- new.env()
  data(list = name, package = package, envir = env)
  if (name == "bivariate") {
    # The train, test and validation parts pooled.
    return(rbind(env$bivariate_train, env$bivariate_test, env$bivariate_val))
  }
  as.data.frame(env[[name]])
}

numeric_levels <- function(column) {
  levels <- levels(column)
  all(!is.na(suppressWarnings(as.numeric(levels))))
}

for (task in tasks) {
  if (!requireNamespace(task[[2]], quietly = TRUE)) {
    message("skip ", task[[1]], ": R package ", task[[2]], " is not installed")
    next
  }
  table <- load_table(task[[2]], task[[3]])
  kinds <- character(0)
  keep <- character(0)
  for (name in names(table)) {
    column <- table[[name]]
    if (inherits(column, "Date") || inherits(column, "POSIXt")) next
    if (is.ordered(column) && numeric_levels(column)) {
      table[[name]] <- as.numeric(as.character(column))
      kinds <- c(kinds, "numeric")
    } else if (is.factor(column) || is.character(column)) {
      table[[name]] <- as.character(column)
      kinds <- c(kinds, "categorical")
    } else if (is.logical(column)) {
      table[[name]] <- as.character(column)
      kinds <- c(kinds, "categorical")
    } else {
      kinds <- c(kinds, "numeric")
    }
    keep <- c(keep, name)
  }
  table <- table[, keep, drop = FALSE]
  write.csv(table, file.path(out, paste0(task[[1]], ".csv")), row.names = FALSE, na = "")
  writeLines(kinds, file.path(out, paste0(task[[1]], ".kinds")))
  message(task[[1]], ": ", nrow(table), " rows, ", ncol(table), " columns")
}

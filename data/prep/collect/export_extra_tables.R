# Writes the extra sklearn-pipelines datasets as tables for `python -m metaopt.collect`.
#
#   Rscript data/prep/collect/export_extra_tables.R EXPORT_EXTRA_R OUT_DIR [--new-only] [--only=a,b]
#
# EXPORT_EXTRA_R is the collection's own export script (export_extra.R beside
# extra_datasets.csv): it knows how to load each dataset and which columns to drop. This wrapper
# runs it unchanged and, as each table is written, applies the meta-dataset protocol's column
# rules and writes OUT_DIR/<task>.kinds (one line per feature column: numeric or categorical):
# factors, logicals and character columns are categorical, ordered factors with numeric levels
# numeric, Date and date-time columns dropped. A missing cell stays an empty field.
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 2) {
  stop("usage: Rscript export_extra_tables.R EXPORT_EXTRA_R OUT_DIR [--new-only] [--only=a,b]")
}
script <- args[[1]]
forwarded <- args[-1]

numeric_levels <- function(column) {
  all(!is.na(suppressWarnings(as.numeric(levels(column)))))
}

protocol_columns <- function(table) {
  kinds <- character(0)
  keep <- character(0)
  for (name in setdiff(names(table), "class")) {
    column <- table[[name]]
    if (inherits(column, "Date") || inherits(column, "POSIXt")) next
    if (is.ordered(column) && numeric_levels(column)) {
      table[[name]] <- as.numeric(as.character(column))
      kinds <- c(kinds, "numeric")
    } else if (is.factor(column) || is.character(column) || is.logical(column)) {
      table[[name]] <- as.character(column)
      kinds <- c(kinds, "categorical")
    } else if (is.numeric(column)) {
      table[[name]] <- as.numeric(column)
      kinds <- c(kinds, "numeric")
    } else {
      next  # lists and other objects are not features
    }
    keep <- c(keep, name)
  }
  list(table = table[, c(keep, "class"), drop = FALSE], kinds = kinds)
}

# Every table the export writes goes through write.table (write.csv calls it): rewrite the
# table by the protocol's rules and write its kinds beside it.
invisible(trace("write.table", where = asNamespace("utils"), print = FALSE, tracer = quote({
  if (is.data.frame(x) && "class" %in% names(x) && is.character(file) &&
      basename(file) != "manifest.csv") {
    converted <- protocol_columns(x)
    x <- converted$table
    writeLines(converted$kinds, sub("\\.csv$", ".kinds", file))
  }
})))
environment(protocol_columns) <- globalenv()

commandArgs <- function(trailingOnly = FALSE) forwarded
source(script, local = new.env())

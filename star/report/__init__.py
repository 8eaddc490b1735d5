"""The ablation report: variants loaded, compared with intervals and paired tests, rendered, plotted, logged."""

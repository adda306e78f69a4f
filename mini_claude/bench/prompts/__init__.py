"""Each product's own summary prompt, sent by the benchmark row that models that product."""

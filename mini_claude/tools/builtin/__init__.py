"""The tools the model is given: one module a tool, each declaring what it is."""

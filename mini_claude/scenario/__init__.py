"""The scripted coding session on a generated project: used by the benchmark and the demo.

``workload`` plans and writes the project (with planted facts), ``codegen``
makes its file contents, ``script`` fixes the turns and tool calls, and
``policy`` is the simulated model that plays them.
"""

"""The architecture census and import rules of src/odradek (docs/architecture.md).

`modules` reads a package's source into modules and import edges, `layers` holds the layer rules and
finds what breaks them (edges and cycles), `patterns` counts the shapes issue #28 removes (mode checks,
post-construction wiring, `Any` collaborators, handler-side waits, hand-made leader checks), `census`
puts them together, and `known_violations` compares what is found with the committed allow-list.
Static analysis only (the standard library's `ast`): nothing is imported or run.
"""

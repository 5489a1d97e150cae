"""A fleet of hosts seen together: the per-host results gathered from each node (results),
the facts that must agree across them (facts), their comparison against the most common value
and a desired-state manifest (manifest, compare), and the pure helpers of fabric validation:
who tests whom in which round (schedule) and what a bandwidth tool's output says (measure)."""

"""Renderers: a Plan in every output format (envfile), the NCCL topology XML (topo_xml), and
the plan as a table for people (human)."""

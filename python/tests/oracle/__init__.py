"""The oracle harness (docs/python-plan.md §10.1–10.2): calls generated from every overload's
schema run under ``torch`` and under ``switchyard`` through ``ops.aten`` (torch.ops semantics),
and their outcomes compared. ``cases.py`` generates the calls, ``argspec.py`` the argument
values, ``outcome.py`` runs a call and compares outcomes, ``record.py`` records PyTorch's
outcomes into ``tests/fixtures/torch_oracle.json.gz``."""

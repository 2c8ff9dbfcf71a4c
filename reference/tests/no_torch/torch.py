# Stands in for a machine without PyTorch: the tests put this directory first
# on PYTHONPATH, so `import torch` fails as it would there.
raise ImportError("reference/tests/no_torch/torch.py stands in for a missing PyTorch")

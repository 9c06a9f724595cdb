"""The torch.nn.functional families composed from fusionflow's ops, one file each;
nn/functional.py re-exports them under torch's names."""

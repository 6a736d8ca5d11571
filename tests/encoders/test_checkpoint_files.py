"""Reading other projects' checkpoint files without running their code: a TorchScript archive (OpenAI's CLIP
``.pt`` files are ones) is read as data, never handed to ``torch.jit.load``, whose ``__setstate__`` methods
run TorchScript — which can write files (``torch.save`` is a TorchScript builtin)."""

import warnings

import pytest
import torch

from mmjudge.encoders.checkpoint_files import ForeignObject, read_torch_file, torchscript_tensors
from mmjudge.encoders.longclip import load_state_dict


class _WritesOnLoad(torch.nn.Module):
    """A module whose TorchScript ``__setstate__`` writes a file wherever the archive is loaded."""

    def __init__(self, marker: str):
        super().__init__()
        self.w = torch.nn.Parameter(torch.arange(3.0))
        self.marker = marker

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.w

    @torch.jit.export
    def __getstate__(self) -> tuple[torch.Tensor, str, bool]:
        return (self.w, self.marker, self.training)

    @torch.jit.export
    def __setstate__(self, state: tuple[torch.Tensor, str, bool]) -> None:
        torch.save(state[0], state[1])
        self.w = state[0]
        self.marker = state[1]
        self.training = state[2]


class _Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 3)
        self.register_buffer("scale", torch.full((1,), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.scale


def _script(module, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchScript's deprecation notices
        torch.jit.save(torch.jit.script(module), str(path))
    return path


def test_a_torchscript_archive_is_read_as_data_and_runs_nothing(tmp_path):
    """Issue 41.3, the same hole in the checkpoint reader: torch.load(weights_only=False) hands a TorchScript
    archive to torch.jit.load, which ran the archive's __setstate__ (here: writing a file)."""
    marker = tmp_path / "written.pt"
    archive = _script(_WritesOnLoad(str(marker)), tmp_path / "evil.pt")
    out = read_torch_file(archive)
    assert not marker.exists()
    assert isinstance(out, ForeignObject) and out.foreign_name.startswith("__torch__.")
    assert out.foreign_name.endswith("._WritesOnLoad")
    weights, where, _training = out.foreign_state  # what __getstate__ returned, as data
    assert weights.tolist() == [0.0, 1.0, 2.0] and where == str(marker)
    with pytest.raises(ValueError, match="not an OpenAI-format ViT CLIP state dict"):
        load_state_dict(archive)  # the CLIP converter's reader: no torch.jit.load fallback either
    assert not marker.exists()


def test_torchscript_tensors_name_parameters_and_buffers_as_state_dict_does(tmp_path):
    module = _Plain()
    archive = _script(module, tmp_path / "plain.pt")
    tensors = torchscript_tensors(read_torch_file(archive))
    expected = module.state_dict()
    assert sorted(tensors) == sorted(expected) == ["lin.bias", "lin.weight", "scale"]
    for key, value in expected.items():
        assert torch.equal(tensors[key], value), key

"""fusionflow.vision.models against torchvision 0.14: the same state_dict keys (in order) and
shapes, torchvision's weights loading with strict=True, the same eval outputs, torchvision's
initialisation, and pretrained weights read from the torch hub cache (never downloaded).

Outputs are compared to a relative 1e-4 of the output's scale: both sides run float32 convs and
matmuls whose summation orders differ, so a few ulps per layer accumulate over 20-50 layers."""
import functools
import os

import numpy as np
import pytest

torchvision = pytest.importorskip("torchvision")
torch = pytest.importorskip("torch")

import fusionflow as ff  # noqa: E402
import fusionflow.vision.models as M  # noqa: E402


def to_ff(sd):
    return {k: ff.from_numpy(v.detach().cpu().numpy().copy()) for k, v in sd.items()}


def assert_same_layout(tm, fm):
    tsd, fsd = tm.state_dict(), fm.state_dict()
    assert list(fsd) == list(tsd)
    for k in tsd:
        assert tuple(fsd[k].shape) == tuple(tsd[k].shape), k
        assert str(fsd[k].dtype).split(".")[-1] == str(tsd[k].dtype).split(".")[-1], k


def assert_same_outputs(tm, fm, x, rtol=1e-4):
    """fm takes tm's weights strictly and must then compute what tm computes."""
    result = fm.load_state_dict(to_ff(tm.state_dict()), strict=True)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    tm.eval()
    fm.eval()
    with torch.no_grad():
        ref = tm(x).numpy()
    with ff.no_grad():
        out = fm(ff.from_numpy(x.numpy().copy())).numpy()
    assert out.shape == ref.shape
    scale = np.abs(ref).max()
    assert scale > 0
    np.testing.assert_allclose(out, ref, rtol=0, atol=rtol * scale)


def cheap_init(monkeypatch):
    """VGG/AlexNet classifiers hold ~100M weights, slow to draw; when the weights are about to be
    replaced by torchvision's anyway, draw nothing."""
    for name in ("normal_", "uniform_", "kaiming_normal_", "kaiming_uniform_"):
        monkeypatch.setattr(ff.nn.init, name, lambda t, *a, **k: t)


CASES = [  # builder, kwargs, input side
    ("resnet18", {}, 64),
    ("resnet50", {}, 64),
    ("resnext50_32x4d", {"num_classes": 10}, 64),
    ("mobilenet_v2", {"width_mult": 0.5, "num_classes": 10}, 64),
    ("mobilenet_v2", {}, 64),
    ("alexnet", {}, 64),
    ("squeezenet1_0", {}, 64),
    ("squeezenet1_1", {"num_classes": 7}, 64),
]


@pytest.mark.parametrize("name,kwargs,side", CASES)
def test_model_matches_torchvision(name, kwargs, side, monkeypatch):
    torch.manual_seed(0)
    tm = getattr(torchvision.models, name)(**kwargs)
    if name == "alexnet":
        cheap_init(monkeypatch)
    fm = getattr(M, name)(**kwargs)
    assert_same_layout(tm, fm)
    torch.manual_seed(1)
    assert_same_outputs(tm, fm, torch.randn(2, 3, side, side))


@pytest.mark.parametrize("name", ["vgg11_bn", "vgg16"])
def test_vgg_matches_torchvision(name, monkeypatch):
    torch.manual_seed(0)
    tm = getattr(torchvision.models, name)()
    cheap_init(monkeypatch)
    fm = getattr(M, name)()
    assert_same_layout(tm, fm)
    assert_same_outputs(tm, fm, torch.randn(1, 3, 32, 32))


def randomise_heads(tm):
    # torchvision zero-initialises the ViT head: random values make the comparison mean something
    with torch.no_grad():
        tm.heads.head.weight.normal_(std=0.05)
        tm.heads.head.bias.normal_(std=0.05)


def test_vit_b_16_matches_torchvision():
    torch.manual_seed(0)
    tm = torchvision.models.vit_b_16()
    fm = M.vit_b_16()
    assert_same_layout(tm, fm)
    randomise_heads(tm)
    assert_same_outputs(tm, fm, torch.randn(1, 3, 224, 224))


def test_small_vision_transformer_matches_torchvision():
    from torchvision.models.vision_transformer import VisionTransformer as TVViT
    cfg = dict(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32, mlp_dim=48, num_classes=5,
               representation_size=16)
    torch.manual_seed(0)
    tm = TVViT(**cfg)
    fm = M.VisionTransformer(**cfg)
    assert_same_layout(tm, fm)
    randomise_heads(tm)
    assert_same_outputs(tm, fm, torch.randn(2, 3, 32, 32))
    with pytest.raises(AssertionError, match="Wrong image height"):
        fm(ff.zeros(1, 3, 16, 32))


def test_vit_loads_pre_0_13_mlp_names():
    # checkpoints saved before torchvision 0.13 call the MLP linears linear_1 / linear_2
    cfg = dict(image_size=16, patch_size=8, num_layers=1, num_heads=2, hidden_dim=8, mlp_dim=12, num_classes=3)
    torch.manual_seed(0)
    tm = torchvision.models.vision_transformer.VisionTransformer(**cfg)
    sd = {k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."): v
          for k, v in tm.state_dict().items()}
    assert any("linear_1" in k for k in sd)
    fm = M.VisionTransformer(**cfg)
    fm.load_state_dict(to_ff(sd), strict=True)
    key = "encoder.layers.encoder_layer_0.mlp.3.weight"
    np.testing.assert_array_equal(fm.state_dict()[key].numpy(), tm.state_dict()[key].numpy())


def test_resnet_variants_layout():
    """Arguments that change the structure: dilation, groups/width, norm_layer, 101 layers."""
    torch.manual_seed(0)
    gn = functools.partial(torch.nn.GroupNorm, 8)
    fgn = functools.partial(ff.nn.GroupNorm, 8)
    kw = dict(replace_stride_with_dilation=[False, True, True], num_classes=4)
    tm, fm = torchvision.models.resnet50(**kw), M.resnet50(**kw)
    assert_same_layout(tm, fm)
    assert_same_outputs(tm, fm, torch.randn(1, 3, 48, 48))
    tm, fm = torchvision.models.resnet18(norm_layer=gn), M.resnet18(norm_layer=fgn)
    assert_same_layout(tm, fm)
    assert_same_outputs(tm, fm, torch.randn(1, 3, 32, 32))
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1"):
        M.ResNet(M.resnet.BasicBlock, [1, 1, 1, 1], groups=2)
    with pytest.raises(ValueError, match="replace_stride_with_dilation"):
        M.resnet50(replace_stride_with_dilation=[True])


def test_resnet_initialisation_follows_torchvision():
    ff.manual_seed(0)
    m = M.resnet18(zero_init_residual=True)
    w = m.conv1.weight.numpy()
    fan_out = w.shape[0] * w.shape[2] * w.shape[3]  # kaiming_normal_, mode fan_out, relu gain
    assert abs(w.std() / np.sqrt(2.0 / fan_out) - 1) < 0.05
    assert (m.bn1.weight.numpy() == 1).all() and (m.bn1.bias.numpy() == 0).all()
    assert (m.layer1[0].bn2.weight.numpy() == 0).all()  # each residual branch starts as identity
    assert (m.layer1[0].bn1.weight.numpy() == 1).all()
    assert abs(m.fc.weight.numpy().max() - 1 / np.sqrt(512)) < 1e-3  # Linear's own U(-1/sqrt(in), .)
    m = M.resnet50(zero_init_residual=True)
    assert (m.layer2[1].bn3.weight.numpy() == 0).all()


def test_other_initialisations_follow_torchvision():
    ff.manual_seed(0)
    m = M.mobilenet_v2()
    assert abs(m.classifier[1].weight.numpy().std() - 0.01) < 5e-4
    assert (m.classifier[1].bias.numpy() == 0).all()
    w = m.features[0][0].weight.numpy()
    assert abs(w.std() / np.sqrt(2.0 / (w.shape[0] * 9)) - 1) < 0.1
    s = M.squeezenet1_1()
    assert abs(s.classifier[1].weight.numpy().std() - 0.01) < 5e-4  # final conv N(0, 0.01)
    assert (s.features[3].squeeze.bias.numpy() == 0).all()
    v = M.VisionTransformer(image_size=32, patch_size=8, num_layers=1, num_heads=2, hidden_dim=64, mlp_dim=64)
    assert (v.heads.head.weight.numpy() == 0).all() and (v.class_token.numpy() == 0).all()
    assert abs(v.encoder.pos_embedding.numpy().std() - 0.02) < 3e-3
    # trunc_normal_(std=sqrt(1/fan_in)), cut at +-2 absolute (as torch's a, b): in effect untruncated
    assert abs(v.conv_proj.weight.numpy().std() / np.sqrt(1 / (3 * 8 * 8)) - 1) < 0.05


# ----------------------------------------------------------------------------------------------
# weights: the enums and the local-only loading

def test_weights_enums_match_torchvision():
    pairs = [("ResNet18_Weights", "IMAGENET1K_V1"), ("ResNet50_Weights", "IMAGENET1K_V2"),
             ("VGG16_Weights", "IMAGENET1K_FEATURES"), ("MobileNet_V2_Weights", "IMAGENET1K_V2"),
             ("AlexNet_Weights", "IMAGENET1K_V1"), ("SqueezeNet1_1_Weights", "IMAGENET1K_V1"),
             ("ViT_B_16_Weights", "IMAGENET1K_SWAG_E2E_V1"), ("Wide_ResNet50_2_Weights", "IMAGENET1K_V2")]
    for enum_name, member in pairs:
        ours, theirs = getattr(getattr(M, enum_name), member), getattr(getattr(torchvision.models, enum_name), member)
        assert ours.url == theirs.url
        assert repr(ours) == repr(theirs)
        for key in ("num_params", "min_size", "categories", "_metrics"):
            assert ours.meta[key] == theirs.meta[key] or (key == "_metrics" and member == "IMAGENET1K_FEATURES"), key
        assert getattr(M, enum_name).DEFAULT == getattr(M, enum_name)[theirs.__class__.DEFAULT.name]
    assert M.ResNet18_Weights.verify("ResNet18_Weights.IMAGENET1K_V1") is M.ResNet18_Weights.IMAGENET1K_V1
    assert M.ResNet18_Weights.verify("IMAGENET1K_V1") is M.ResNet18_Weights.IMAGENET1K_V1
    assert M.get_weight("ResNet50_Weights.IMAGENET1K_V2") is M.ResNet50_Weights.IMAGENET1K_V2
    with pytest.raises(TypeError, match="expected ResNet18_Weights"):
        M.resnet18(weights=M.ResNet34_Weights.IMAGENET1K_V1)
    with pytest.raises(ValueError, match="Unknown value 'V9'"):
        M.ResNet18_Weights.verify("V9")
    with pytest.raises(ValueError, match="num_classes"):
        M.resnet18(weights=M.ResNet18_Weights.IMAGENET1K_V1, num_classes=10)
    assert {"resnet18", "vgg16_bn", "mobilenet_v2", "alexnet", "squeezenet1_0", "vit_b_16"} <= set(M.list_models())
    assert M.get_model_weights("resnet50") is M.ResNet50_Weights
    assert M.get_model("squeezenet1_1", num_classes=3).classifier[1].out_channels == 3


def test_weights_transforms_match_torchvision():
    pytest.importorskip("fusionflow.vision.transforms")
    from PIL import Image
    img = Image.fromarray(np.random.RandomState(0).randint(0, 256, (70, 90, 3), dtype=np.uint8))
    for ours, theirs in [(M.ResNet50_Weights.IMAGENET1K_V2, torchvision.models.ResNet50_Weights.IMAGENET1K_V2),
                         (M.ViT_B_16_Weights.IMAGENET1K_SWAG_LINEAR_V1,
                          torchvision.models.ViT_B_16_Weights.IMAGENET1K_SWAG_LINEAR_V1)]:
        a, b = ours.transforms(), theirs.transforms()
        assert (a.crop_size, a.resize_size, a.mean, a.std) == (b.crop_size, b.resize_size, b.mean, b.std)
        assert str(a.interpolation) == str(b.interpolation)
        out, ref = a(img).numpy(), b(img).numpy()
        assert out.shape == ref.shape == (3, 224, 224)
        np.testing.assert_allclose(out, ref, atol=1e-4)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    return tmp_path / "hub" / "checkpoints"


def test_pretrained_resnet18_loads_from_hub_cache(hub):
    torch.manual_seed(3)
    tm = torchvision.models.resnet18().eval()
    hub.mkdir(parents=True)
    torch.save(tm.state_dict(), str(hub / "resnet18-f37072fd.pth"))
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        ref = tm(x).numpy()
    models = [M.resnet18(weights=M.ResNet18_Weights.IMAGENET1K_V1), M.resnet18(weights="IMAGENET1K_V1")]
    with pytest.warns(UserWarning, match="deprecated"):
        models.append(M.resnet18(pretrained=True))
    with pytest.warns(UserWarning):
        models.append(M.resnet18(True))  # the pre-0.13 positional form
    for fm in models:
        with ff.no_grad():
            out = fm.eval()(ff.from_numpy(x.numpy())).numpy()
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-4 * np.abs(ref).max())
    with pytest.warns(UserWarning):
        fresh = M.resnet18(pretrained=False)
    assert not np.array_equal(fresh.fc.weight.numpy(), models[0].fc.weight.numpy())


def test_pretrained_missing_file_names_file_directory_and_url(hub):
    with pytest.raises(FileNotFoundError) as err:
        M.resnet18(weights=M.ResNet18_Weights.DEFAULT)
    message = str(err.value)
    assert "resnet18-f37072fd.pth" in message
    assert str(hub) in message
    assert "https://download.pytorch.org/models/resnet18-f37072fd.pth" in message
    with pytest.warns(UserWarning, match="deprecated"), pytest.raises(FileNotFoundError,
                                                                       match="mobilenet_v2-b0353104.pth"):
        M.mobilenet_v2(pretrained=True)  # the legacy default: IMAGENET1K_V1, not DEFAULT
    with pytest.raises(ValueError, match="No weights available"):
        M.vit_h_14(pretrained=True)


def test_default_hub_directory(monkeypatch):
    monkeypatch.delenv("TORCH_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/nonexistent/cache")
    assert M._weights.get_dir() == torch.hub.get_dir() == os.path.join("/nonexistent/cache", "torch", "hub")

"""Layer families of ``cygrad.nn``, one file each (convolution, pooling,
normalisation, padding, upsampling, flattening)."""

from .activation import (  # noqa: F401
    CELU, ELU, GELU, GLU, PReLU, ReLU, ReLU6, SELU, Hardshrink, Hardsigmoid,
    Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, SiLU, Sigmoid,
    Softmax, Softmax2d, Softmin, Softplus, Softshrink, Softsign, Tanh, Tanhshrink,
    Threshold,
)
from . import activation
from .container import (
    ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential,
)
from . import container
from .linear import (
    Bilinear, Identity, LazyLinear, Linear, NonDynamicallyQuantizableLinear,
)
from .loss import *  # noqa: F401,F403  (loss.__all__)
from .pixelshuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle
from . import linear, loss, pixelshuffle
from .dropout import (
    AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout,
)
from .attention import MultiheadAttention
from .conv import (
    Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, LazyConv1d, LazyConv2d,
)
from .flatten import Flatten, Unflatten
from .fold import CosineSimilarity, Fold, PairwiseDistance, Unfold
from .normalization import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, LayerNorm, LazyBatchNorm1d, LazyBatchNorm2d,
    RMSNorm,
)
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .padding import (
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase
from .sparse import Embedding, EmbeddingBag
from .transformer import (
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AvgPool1d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "CircularPad1d",
    "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "Conv1d", "Conv2d",
    "ConvTranspose1d", "ConvTranspose2d", "Flatten", "GroupNorm", "InstanceNorm1d",
    "InstanceNorm2d", "InstanceNorm3d", "LayerNorm",
    "MaxPool1d", "MaxPool2d", "RMSNorm", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d", "Unflatten", "Upsample",
    "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d",
]
__all__ += [
    "AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "Embedding",
    "EmbeddingBag", "FeatureAlphaDropout",
]
__all__ += activation.__all__ + container.__all__ + linear.__all__ + loss.__all__
__all__ += ["CosineSimilarity", "Fold", "PairwiseDistance", "Unfold"]
__all__ += pixelshuffle.__all__ + ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyConv1d",
                               "LazyConv2d"]
__all__ += ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell",
            "RNNCellBase"]
__all__ += ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]
__all__ += ["Transformer", "TransformerDecoder", "TransformerDecoderLayer",
            "TransformerEncoder", "TransformerEncoderLayer"]
from .more import (  # noqa: E402
    LPPool1d, LPPool2d, LazyBatchNorm3d, LazyConvTranspose1d, LazyConvTranspose2d,
    LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d, LocalResponseNorm,
)
from . import more  # noqa: E402

__all__ += more.__all__

# the 3-d layers and max unpooling
from .conv import Conv3d, ConvTranspose3d, LazyConv3d  # noqa: E402
from .padding import (  # noqa: E402
    CircularPad3d, ConstantPad3d, ReflectionPad3d, ReplicationPad3d, ZeroPad3d,
)
from .pooling import (  # noqa: E402
    AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, MaxPool3d, MaxUnpool1d,
    MaxUnpool2d, MaxUnpool3d,
)
from .more3d import LPPool3d, LazyConvTranspose3d  # noqa: E402
from . import more3d  # noqa: E402

__all__ += ["Conv3d", "ConvTranspose3d", "LazyConv3d", "CircularPad3d",
            "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d", "ZeroPad3d",
            "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "MaxPool3d",
            "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"] + more3d.__all__
from .pooling import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: E402

__all__ += ["FractionalMaxPool2d", "FractionalMaxPool3d"]
from .activation import RReLU  # noqa: E402,F401  (in activation.__all__)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402,F401
from . import adaptive  # noqa: E402

__all__ += adaptive.__all__
from .legacy import Container, CrossMapLRN2d  # noqa: E402,F401
from .syncbatchnorm import SyncBatchNorm  # noqa: E402,F401
from . import legacy, syncbatchnorm  # noqa: E402

__all__ += legacy.__all__ + syncbatchnorm.__all__

# torch's module paths that hold no layer of their own here (scripts import
# _BatchNorm, _pair, Module ... from them)
from . import batchnorm, channelshuffle, distance, module, utils  # noqa: E402,F401
from ..module import Module  # noqa: E402,F401  (torch.nn.modules.Module)
from .linear_cross_entropy import (  # noqa: E402,F401
    LinearCrossEntropyLoss, LinearCrossEntropyOptions,
)
from . import linear_cross_entropy, linear_cross_entropy_options  # noqa: E402

__all__ += linear_cross_entropy.__all__

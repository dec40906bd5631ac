"""Datasets, samplers and ``DataLoader``, with ``torch.utils.data``'s API."""

from cygrad.utils.data._collate import (  # noqa: F401
    collate,
    default_collate,
    default_collate_fn_map,
    default_convert,
)
from cygrad.utils.data._worker import WorkerInfo, get_worker_info  # noqa: F401
from cygrad.utils.data.dataloader import DataLoader  # noqa: F401
from cygrad.utils.data.dataset import (  # noqa: F401
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from cygrad.utils.data.distributed import DistributedSampler  # noqa: F401
from cygrad.utils.data.sampler import (  # noqa: F401
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

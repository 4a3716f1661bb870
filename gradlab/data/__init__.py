"""Layer 5: small datasets and tasks that ship with gradlab (nothing is downloaded at run time)."""
from .dataloader import (  # noqa: F401
    ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset, Subset, TensorDataset, default_collate,
    random_split,
)
from .sampler import (  # noqa: F401
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler,
)
from .sklearn_digits import digits, have_digits  # noqa: F401
from .sequence import AdditionTask, ReversalTask, SequenceTask, SortTask  # noqa: F401
from .synthetic import blobs, make_blobs, make_moons, make_spirals, moons, spirals  # noqa: F401
from .text import CharDataset, stdlib_text  # noqa: F401

"""Layer 5: small datasets and tasks that ship with gradlab (nothing is downloaded at run time)."""
from .dataloader import ConcatDataset, DataLoader, Dataset, Subset, TensorDataset, default_collate, random_split  # noqa: F401
from .digits import digits, have_digits  # noqa: F401
from .sequence import AdditionTask, ReversalTask, SequenceTask, SortTask  # noqa: F401
from .synthetic import blobs, make_blobs, make_moons, make_spirals, moons, spirals  # noqa: F401
from .text import CharDataset, stdlib_text  # noqa: F401

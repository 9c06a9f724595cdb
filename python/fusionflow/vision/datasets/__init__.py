"""torchvision.datasets' common datasets, reading the files where torchvision puts them:

    MNIST, FashionMNIST, KMNIST, EMNIST   root/<Name>/raw/*-idx?-ubyte (or .gz)
    CIFAR10, CIFAR100                     root/cifar-10-batches-py/, root/cifar-100-python/
    SVHN                                  root/{train,test,extra}_32x32.mat
    ImageFolder, DatasetFolder            root/<class>/<files>
    FakeData                              random images, repeatable per index

Nothing is downloaded (there is no network): download=True uses files already in place and
otherwise raises a RuntimeError naming the files to put there and where torchvision gets them."""
from .cifar import CIFAR10, CIFAR100
from .fakedata import FakeData
from .folder import DatasetFolder, ImageFolder
from .mnist import EMNIST, KMNIST, MNIST, FashionMNIST
from .svhn import SVHN
from .vision import VisionDataset

__all__ = ("CIFAR10", "CIFAR100", "DatasetFolder", "EMNIST", "FakeData", "FashionMNIST", "ImageFolder", "KMNIST",
           "MNIST", "SVHN", "VisionDataset")

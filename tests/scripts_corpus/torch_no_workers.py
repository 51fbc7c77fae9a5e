import torch
from torch.utils.data import DataLoader


def main():
    dataset = torch.load("train.pt")
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    model = torch.nn.Linear(10, 2).cuda()
    for x, y in loader:
        model(x.cuda())


if __name__ == "__main__":
    main()

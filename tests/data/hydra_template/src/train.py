"""A training entry in the likeness of lightning-hydra-template's src/train.py."""

from typing import Any

import hydra


@hydra.main(version_base="1.3", config_path="../configs", config_name="train.yaml")
def main(cfg: Any) -> None:
    print(cfg)


if __name__ == "__main__":
    main()

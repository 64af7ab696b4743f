"""A Hydra app that records its composed configuration (docs: config files)."""

import hydra
from hydra.core.hydra_config import HydraConfig

import expdna


@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg):
    run = expdna.start(cfg, output_dir=HydraConfig.get().runtime.output_dir)
    # ... train ...
    run.finish(metrics={"val_loss": 0.25})


if __name__ == "__main__":
    main()

// metaopt-train: meta-trains a model on a meta-dataset folder and publishes it
// as a new version of a model registry (docs/models.md). See train_main.h.
#include <iostream>

#include "core/meta_training/train_main.h"

int main(int argc, char** argv) {
  return metaopt::train::MetaoptTrainMain(argc, argv, std::cout, std::cerr);
}

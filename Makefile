# kiln: `make run` sets everything up and runs the main job; `make test` runs the whole suite.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all bootstrap build run test clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: bootstrap $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

run: build
	bash scripts/demo.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 1500

clean:
	rm -rf $(BUILD)

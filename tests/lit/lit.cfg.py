# Golden CLI tests: each .coll file states how to run collc on it (RUN lines)
# and what must come out (CHECK lines).
import os
import lit.formats

config.name = "collc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".coll", ".test"]
config.test_source_root = os.path.dirname(__file__)
# Each ctest entry names its own exec root (tests/CMakeLists.txt says why).
config.test_exec_root = lit_config.params.get(
    "collc_exec_root", os.path.join(config.collc_binary_dir, "tests", "lit"))
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]

config.substitutions.append(("%collc", config.collc))
config.substitutions.append(("%specs", config.collc_specs_dir))
config.environment["PATH"] = os.pathsep.join(
    [os.path.dirname(config.collc), config.llvm_tools_dir,
     config.environment.get("PATH", os.environ.get("PATH", ""))])

# Headless Chromium renders the drawings (draw/render.test); without it that
# test is UNSUPPORTED, and lit says so.
import shutil
import sys
chromium = next((shutil.which(b) for b in ("chromium", "chromium-browser",
                                           "google-chrome")
                 if shutil.which(b)), None)
if chromium:
    config.available_features.add("chromium")
    config.substitutions.append(
        ("%chromium", chromium + " --headless --no-sandbox --disable-gpu "
         "--hide-scrollbars --user-data-dir=%t.profile"))
else:
    lit_config.note("no Chromium on PATH: draw/render.test is skipped "
                    "(scripts/setup.sh installs the chromium package)")
config.substitutions.append(("%python", sys.executable))

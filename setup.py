"""Builds backstep._core with CMake (python/CMakeLists.txt) for pip.

The extension uses the stable ABI (Py_LIMITED_API 3.11), so the wheel is
tagged cp311-abi3 and installs in any CPython >= 3.11. setuptools' own
build directory is build-pip/ (CMake's tree is build-pip/cmake), away from
the developers' build/.
"""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.join(ROOT, "build-pip", "cmake")
        jobs = os.environ.get("BACKSTEP_JOBS", str(os.cpu_count() or 1))
        configure = ["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                     "-DCMAKE_BUILD_TYPE=Release", "-DBACKSTEP_BENCH=OFF",
                     f"-DPython3_EXECUTABLE={sys.executable}"]
        if shutil.which("ccache"):
            configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
                          "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", build_dir, "-j", jobs, "--target", "backstep_python"],
                       check=True)
        built = os.path.join(build_dir, "python", "backstep", "_core.abi3.so")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)


setup(
    packages=["backstep"],
    package_dir={"": "python"},
    package_data={"backstep": ["_core.pyi", "py.typed"]},
    ext_modules=[Extension("backstep._core", sources=[], py_limited_api=True)],
    cmdclass={"build_ext": CMakeBuild},
    options={"bdist_wheel": {"py_limited_api": "cp311"}, "build": {"build_base": "build-pip"}},
)

"""Build script for rbd_estimator (ament_python layout; also installable with pip)."""

import os
from glob import glob

from setuptools import find_packages, setup
from setuptools.command.develop import develop as _develop
from setuptools.command.install import install as _install

package_name = 'rbd_estimator'
here = os.path.dirname(os.path.abspath(__file__))


def files(pattern):
    """Files (not directories) matching ``pattern``, relative to this directory.

    ``data_files`` paths must be relative to setup.py, and colcon, pip and
    ``setup.py`` invoked by hand do not all run from the same directory.
    """
    matches = sorted(glob(os.path.join(here, pattern)))
    return [os.path.relpath(m, here) for m in matches if os.path.isfile(m)]


data_files = [
    ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
    ('share/' + package_name, ['package.xml']),
    ('share/' + package_name + '/launch', files('launch/*.launch.py')),
    ('share/' + package_name + '/config', files('config/*')),
]
if files('urdf/*'):
    data_files.append(('share/' + package_name + '/urdf', files('urdf/*')))

oracle = ['pin>=3.0']


def warm_cache(lib_dir):
    """Compile the kernels into the cache of the package installed in ``lib_dir``
    (``rbd-estimator warm-cache``), so that the first configure loads machine code instead of
    compiling it for half a minute. Best effort: skipped with a note where the package cannot run
    yet (an isolated build environment without numpy/numba) or when RBD_ESTIMATOR_SKIP_WARM=1."""
    if os.environ.get('RBD_ESTIMATOR_SKIP_WARM') == '1':
        return
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [lib_dir] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]))
    env.pop('RBD_ESTIMATOR_CACHE_DIR', None)
    env['RBD_ESTIMATOR_SHARE_DIR'] = here         # configs and URDFs (not yet in place in a wheel build)
    res = subprocess.run([sys.executable, '-m', 'rbd_estimator.warm'], env=env, cwd=lib_dir)
    if res.returncode != 0:
        print('rbd_estimator: the compiled-code cache was not pre-warmed; run `rbd-estimator warm-cache` '
              'after installing (the first configure compiles otherwise)', file=sys.stderr)


class install(_install):
    """``install`` (colcon build; ``pip install .`` and ``pip wheel .``, whose build environment
    ``pyproject.toml`` provides with the runtime dependencies), then :func:`warm_cache` of the
    installed package."""

    def run(self):
        super().run()
        warm_cache(self.install_lib)


class develop(_develop):
    """``develop`` (``colcon build --symlink-install``), then :func:`warm_cache` of the sources."""

    def run(self):
        super().run()
        if not self.uninstall:
            warm_cache(here)


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=data_files,
    python_requires='>=3.10',
    install_requires=[
        'numpy',
        'scipy',
        'PyYAML',
        'urdfdom-py',
        'numba',
        'threadpoolctl',
        'rosbags',
    ],
    extras_require={
        'oracle': oracle,
        'replay': ['mcap', 'matplotlib', 'pyarrow'],
        'fleet': ['mcap', 'matplotlib', 'pyarrow', 'ray'],
        'test': oracle + ['pytest', 'example-robot-data', 'matplotlib', 'mcap', 'mujoco'],
    },
    cmdclass={'install': install, 'develop': develop},
    zip_safe=False,
    maintainer='rbd_estimator maintainers',
    maintainer_email='maintainers@rbd-estimator.invalid',
    description=(
        'Rigid-body dynamics estimator: joint torques and internal/external wrenches '
        'from force-torque sensors, IMUs and joint states by a planned sparse '
        'factorisation of the Newton-Euler equations.'
    ),
    license='BSD-3-Clause',
    entry_points={
        'console_scripts': [
            'estimator_node = rbd_estimator.node:main',
            'rbd-estimator = rbd_estimator.cli:main',
        ],
    },
)

"""Build script for rbd_estimator (ament_python layout; also installable with pip)."""

import os
from glob import glob

from setuptools import find_packages, setup

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
    ],
    extras_require={
        'oracle': oracle,
        'replay': ['rosbags', 'matplotlib'],
        'test': oracle + ['pytest', 'example-robot-data', 'matplotlib', 'rosbags'],
    },
    zip_safe=True,
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

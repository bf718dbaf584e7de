// Puts the daemon into the package: client-extension/bundled/ holds the hdcontext wheel built
// from this repository and manifest.json (what is there, how big, for which Pythons); with
// --target (a `vsce package --target` name, e.g. linux-x64) also the wheels of every dependency
// for that platform and each CPython in PYTHONS, so that the extension installs them with
// `pip --no-index` (no network), and pip's own wheel, which runs that install in an environment
// made without pip. The extension reads manifest.json (src/envPlan.ts).
//
//   node scripts/bundle-daemon.mjs --python PY --repo ROOT [--target linux-x64] [--pythons 3.11,3.12]
//
// --pythons narrows the CPythons a platform package carries (default: all of PYTHONS); `make e2e`
// builds its package for the one Python the end-to-end test runs, into out/e2e/.
//
// PY runs pip (the repository's .venv in the Makefile); the dependency wheels come from the
// package index of pip's own configuration.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The CPythons a platform package carries wheels for: hdcontext's requires-python, to today's newest. */
const PYTHONS = ['3.11', '3.12', '3.13', '3.14'];

// pip takes platform tags literally (it widens only manylinux2014/2010 and macOS versions), so
// each Linux target lists every manylinux tag a wheel may carry. VS Code itself needs glibc 2.28
// (and macOS 11), so nothing newer than that is asked for.
const manylinux = (arch) => [
    ...Array.from({ length: 12 }, (_, i) => `manylinux_2_${28 - i}_${arch}`),
    `manylinux2014_${arch}`,
    ...(arch === 'x86_64' ? [`manylinux2010_${arch}`, `manylinux1_${arch}`] : []),
];
const PLATFORM_TAGS = {
    'linux-x64': manylinux('x86_64'),
    'linux-arm64': manylinux('aarch64'),
    'alpine-x64': ['musllinux_1_2_x86_64', 'musllinux_1_1_x86_64'],
    'alpine-arm64': ['musllinux_1_2_aarch64', 'musllinux_1_1_aarch64'],
    'darwin-x64': ['macosx_11_0_x86_64'],
    'darwin-arm64': ['macosx_11_0_arm64'],
    'win32-x64': ['win_amd64'],
    'win32-arm64': ['win_arm64'],
};

function args(argv) {
    const out = { python: 'python3', repo: undefined, target: '', out: undefined, pythons: '' };
    for (let i = 0; i < argv.length; i++) {
        const key = argv[i].replace(/^--/, '');
        if (!(key in out)) {
            throw new Error(`unknown option ${argv[i]}`);
        }
        out[key] = argv[++i] ?? '';
    }
    return out;
}

function run(command, argv, what) {
    const r = spawnSync(command, argv, { stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.error || r.status !== 0) {
        throw new Error(`${what} failed (${r.error?.message ?? `exit ${r.status}`}): ${command} ${argv.join(' ')}`);
    }
}

const sha256 = (file) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

function main() {
    const here = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
    const opts = args(process.argv.slice(2));
    const repo = path.resolve(opts.repo ?? path.dirname(here));
    const out = path.resolve(opts.out ?? path.join(here, 'bundled'));
    const target = opts.target.trim();
    const pythons = opts.pythons.trim() ? opts.pythons.split(',').map((p) => p.trim()) : PYTHONS;
    const unknown = pythons.filter((p) => !PYTHONS.includes(p));
    if (unknown.length) {
        throw new Error(`--pythons ${unknown.join(', ')}: hdcontext's package carries CPython ${PYTHONS.join(', ')}`);
    }
    if (target && !(target in PLATFORM_TAGS)) {
        throw new Error(`no platform tags known for target ${target} (known: ${Object.keys(PLATFORM_TAGS).join(', ')})`);
    }
    fs.rmSync(out, { recursive: true, force: true });
    const wheels = path.join(out, 'wheels');
    fs.mkdirSync(wheels, { recursive: true });

    // The wheel is built from a copy of what it packages: setuptools reuses a build/ folder
    // it finds, which would carry modules deleted since into the wheel.
    const src = fs.mkdtempSync(path.join(os.tmpdir(), 'hdcontext-wheel-'));
    try {
        for (const name of ['pyproject.toml', 'README.md']) {
            fs.copyFileSync(path.join(repo, name), path.join(src, name));
        }
        fs.cpSync(path.join(repo, 'server'), path.join(src, 'server'), {
            recursive: true,
            filter: (p) => !/(__pycache__|\.egg-info|\.pyc)$/.test(p),
        });
        console.log(`bundle-daemon: building the hdcontext wheel (pip wheel, from ${repo})`);
        run(opts.python, ['-m', 'pip', 'wheel', '--quiet', '--disable-pip-version-check', '--no-deps', '--wheel-dir', wheels, src], 'building the hdcontext wheel');
    } finally {
        fs.rmSync(src, { recursive: true, force: true });
    }
    const wheel = fs.readdirSync(wheels).find((f) => /^hdcontext-.*\.whl$/.test(f));
    if (!wheel) {
        throw new Error('pip wheel made no hdcontext wheel');
    }
    const version = wheel.split('-')[1];
    // The wheel's own dependencies (Requires-Dist), which the extension names when it installs them.
    const metadata = spawnSync(
        opts.python,
        [
            '-c',
            'import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1]) as z:\n    name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))\n    print(z.read(name).decode())',
            path.join(wheels, wheel),
        ],
        { encoding: 'utf8' },
    );
    if (metadata.status !== 0) {
        throw new Error(`reading the wheel's METADATA failed: ${metadata.stderr}`);
    }
    const requires = metadata.stdout
        .split('\n')
        .filter((l) => l.startsWith('Requires-Dist:') && !l.includes('extra =='))
        .map((l) => l.slice('Requires-Dist:'.length).trim());

    if (target) {
        const platforms = PLATFORM_TAGS[target].flatMap((p) => ['--platform', p]);
        for (const py of pythons) {
            console.log(`bundle-daemon: downloading the dependency wheels for ${target}, CPython ${py} (pip download, from your package index)`);
            run(
                opts.python,
                [
                    '-m', 'pip', 'download', '--quiet', '--disable-pip-version-check',
                    '--only-binary=:all:', '--implementation', 'cp', '--python-version', py, ...platforms,
                    '--dest', wheels, path.join(wheels, wheel),
                ],
                `downloading the wheels for CPython ${py}`,
            );
        }
    }

    if (target) {
        // pip's own wheel: the extension makes the environment without pip and runs pip from it
        // (src/envPlan.ts), instead of ensurepip installing and compiling a pip nothing uses.
        console.log('bundle-daemon: downloading pip\'s wheel (pip download, from your package index)');
        run(
            opts.python,
            ['-m', 'pip', 'download', '--quiet', '--disable-pip-version-check', '--only-binary=:all:', '--no-deps', '--dest', wheels, 'pip'],
            "downloading pip's wheel",
        );
    }

    const files = fs.readdirSync(wheels).filter((f) => f.endsWith('.whl')).sort();
    const pipWheel = files.find((f) => /^pip-[^-]+-py3-none-any\.whl$/.test(f));
    const listed = files.map((file) => ({ file, bytes: fs.statSync(path.join(wheels, file)).size, sha256: sha256(path.join(wheels, file)) }));
    const key = createHash('sha256')
        .update(JSON.stringify([target, listed.map((w) => [w.file, w.sha256])]))
        .digest('hex')
        .slice(0, 16);
    const manifest = {
        hdcontext: version,
        wheel,
        target: target || null,
        pythons: target ? pythons : [],
        key,
        requires,
        wheels: listed.map(({ file, bytes }) => ({ file, bytes })),
        ...(pipWheel ? { pip: pipWheel } : {}),
    };
    fs.writeFileSync(path.join(out, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
    const total = listed.reduce((n, w) => n + w.bytes, 0);
    console.log(`bundle-daemon: ${path.relative(process.cwd(), out)}: ${files.length} wheels, ${(total / 1e6).toFixed(1)} MB${target ? ` (${target}, CPython ${pythons.join(', ')})` : ' (the dependencies come from the user\'s package index)'}`);
}

try {
    main();
} catch (err) {
    console.error(`bundle-daemon: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
}

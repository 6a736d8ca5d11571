"""A stand-in for SPICE's ``spice-1.0.jar``, ours: a small Java program built into a jar of that name, with
the real jar's manifest layout (``Main-Class`` ``edu.anu.spice.SpiceScorer``, a ``Class-Path`` naming
``lib/stanford-corenlp-3.6.0*.jar``),
so mmjudge runs it exactly as it runs the real one (``java -jar … <input> -cache … -out … -subset -silent``).

It reads SPICE's input file (``[{"image_id", "test", "refs"}]``) and writes SPICE's output format
(``[{"image_id", "scores": {"All": {"tp", "fp", "fn", "pr", "re", "f", "numImages"}, "Object": …}}]``), with
``null`` for a category the references lack, as json-simple writes NaN. Its "tuples" are simply the distinct
lower-cased words (:func:`expected_scores` computes the same in Python, independently). It refuses to run
unless the two CoreNLP jars are on its class path (each holds a marker file), records its command line in the
cache folder, and, with ``SPICE_STANDIN_FAIL=nashorn``, fails the way the real jar fails on Java 15+.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import zipfile
from pathlib import Path

CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")
COLOR = {"red", "blue", "green", "white", "black"}
SIZE = {"big", "small", "large", "tall"}
COUNT = {"one", "two", "three"}
RELATION = {"on", "in", "near", "under"}

_JAVA = r"""
package edu.anu.spice;

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

@SuppressWarnings("unchecked")
public class SpiceScorer {
    static String src; static int pos;

    public static void main(String[] args) throws Exception {
        if (System.getenv("SPICE_STANDIN_FAIL") != null) {
            System.err.println("Exception in thread \"main\" java.lang.NullPointerException: Cannot invoke "
                + "\"javax.script.ScriptEngine.put(String, Object)\" because \"engine\" is null");
            System.err.println("\tat edu.anu.spice.SpiceScorer.scoreBatch(SpiceScorer.java:101)");
            System.exit(1);
        }
        for (String marker : new String[] {"standin/corenlp.txt", "standin/corenlp-models.txt"}) {
            if (SpiceScorer.class.getClassLoader().getResource(marker) == null) {
                System.err.println("java.lang.NoClassDefFoundError: edu/stanford/nlp/pipeline/StanfordCoreNLP");
                System.exit(1);
            }
        }
        String input = args[0], cache = null, out = null; boolean subset = false;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "-cache": cache = args[++i]; break;
                case "-out": out = args[++i]; break;
                case "-subset": subset = true; break;
                case "-silent": case "-noSynsets": case "-detailed": break;
                case "-threads": i++; break;
                default: System.err.println("Unknown option \"" + args[i] + "\""); System.exit(1);
            }
        }
        if (cache != null) {
            Files.createDirectories(Paths.get(cache));
            Files.write(Paths.get(cache, "argv.txt"), String.join("\n", args).getBytes(StandardCharsets.UTF_8));
        }
        src = new String(Files.readAllBytes(Paths.get(input)), StandardCharsets.UTF_8); pos = 0;
        List<Object> items = (List<Object>) value();
        StringBuilder sb = new StringBuilder("[\n");
        for (int k = 0; k < items.size(); k++) {
            Map<String, Object> item = (Map<String, Object>) items.get(k);
            Set<String> test = words((String) item.get("test"));
            Set<String> ref = new TreeSet<>();
            for (Object r : (List<Object>) item.get("refs")) ref.addAll(words((String) r));
            sb.append("  {\"image_id\": ").append(item.get("image_id")).append(", \"scores\": {");
            sb.append("\"All\": ").append(stats(test, ref, null, false));
            if (subset) {
                String[][] cats = {{"Object", "o"}, {"Attribute", "a"}, {"Relation", "r"}, {"Cardinality", "n"},
                                   {"Color", "c"}, {"Size", "s"}};
                for (String[] c : cats) {
                    sb.append(", \"").append(c[0]).append("\": ").append(stats(test, ref, c[1], true));
                }
            }
            sb.append("}}").append(k + 1 < items.size() ? ",\n" : "\n");
        }
        sb.append("]\n");
        Files.write(Paths.get(out), sb.toString().getBytes(StandardCharsets.UTF_8));
    }

    static Set<String> words(String text) {
        Set<String> out = new TreeSet<>();
        for (String w : text.toLowerCase().trim().split("\\s+")) if (!w.isEmpty()) out.add(w);
        return out;
    }

    static final Set<String> COLOR = new HashSet<>(Arrays.asList("red", "blue", "green", "white", "black"));
    static final Set<String> SIZE = new HashSet<>(Arrays.asList("big", "small", "large", "tall"));
    static final Set<String> COUNT = new HashSet<>(Arrays.asList("one", "two", "three"));
    static final Set<String> REL = new HashSet<>(Arrays.asList("on", "in", "near", "under"));

    static boolean in(String w, String cat) {
        if (cat == null) return true;
        switch (cat) {
            case "c": return COLOR.contains(w);
            case "s": return SIZE.contains(w);
            case "n": return COUNT.contains(w);
            case "a": return COLOR.contains(w) || SIZE.contains(w);
            case "r": return REL.contains(w);
            default: return !COLOR.contains(w) && !SIZE.contains(w) && !COUNT.contains(w) && !REL.contains(w);
        }
    }

    static String stats(Set<String> test, Set<String> ref, String cat, boolean allowNan) {
        int t = 0, r = 0, tp = 0;
        for (String w : test) if (in(w, cat)) { t++; if (ref.contains(w)) tp++; }
        for (String w : ref) if (in(w, cat)) r++;
        double pr = t > 0 ? (double) tp / t : (allowNan ? Double.NaN : 0.0);
        double re = r > 0 ? (double) tp / r : (allowNan ? Double.NaN : 0.0);
        double f = (pr > 0 && re > 0) ? 2 * pr * re / (pr + re) : (allowNan && r == 0 ? Double.NaN : 0.0);
        return "{\"tp\": " + tp + ", \"fp\": " + (t - tp) + ", \"fn\": " + (r - tp) + ", \"pr\": " + num(pr)
            + ", \"re\": " + num(re) + ", \"f\": " + num(f) + ", \"numImages\": 1}";
    }

    static String num(double x) { return Double.isNaN(x) ? "null" : Double.toString(x); }

    // A minimal JSON reader: objects, arrays, strings (with escapes), integers.
    static Object value() {
        skip();
        char c = src.charAt(pos);
        if (c == '[') { pos++; List<Object> l = new ArrayList<>(); skip();
            if (src.charAt(pos) == ']') { pos++; return l; }
            while (true) { l.add(value()); skip(); if (src.charAt(pos++) == ']') return l; } }
        if (c == '{') { pos++; Map<String, Object> m = new HashMap<>(); skip();
            if (src.charAt(pos) == '}') { pos++; return m; }
            while (true) { skip(); String k = (String) value(); skip(); pos++; m.put(k, value()); skip();
                if (src.charAt(pos++) == '}') return m; } }
        if (c == '"') { pos++; StringBuilder sb = new StringBuilder();
            while (src.charAt(pos) != '"') {
                char d = src.charAt(pos++);
                if (d != '\\') { sb.append(d); continue; }
                char e = src.charAt(pos++);
                switch (e) {
                    case 'n': sb.append('\n'); break; case 't': sb.append('\t'); break;
                    case 'r': sb.append('\r'); break; case 'b': sb.append('\b'); break;
                    case 'f': sb.append('\f'); break;
                    case 'u': sb.append((char) Integer.parseInt(src.substring(pos, pos + 4), 16)); pos += 4; break;
                    default: sb.append(e);
                }
            }
            pos++; return sb.toString(); }
        int start = pos;
        while (pos < src.length() && "-0123456789".indexOf(src.charAt(pos)) >= 0) pos++;
        return Long.parseLong(src.substring(start, pos));
    }

    static void skip() { while (Character.isWhitespace(src.charAt(pos))) pos++; }
}
"""


def java_tools_available() -> bool:
    return all(shutil.which(tool) for tool in ("java", "javac"))


def _marker_jar(path: Path, marker: str) -> None:
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr(f"standin/{marker}", "a stand-in for a CoreNLP 3.6.0 jar\n")


def build_spice_folder(root: Path, corenlp_in_lib: bool = True) -> tuple[Path, Path]:
    """Write ``root/spice/spice-1.0.jar`` (the stand-in) and the two marker jars, in ``root/spice/lib/`` (where
    the manifest looks) or, with ``corenlp_in_lib=False``, in ``root/corenlp/``. Returns ``(spice, corenlp)``."""
    spice = root / "spice"
    build = root / "build"
    (spice / "lib").mkdir(parents=True)
    build.mkdir()
    (build / "SpiceScorer.java").write_text(_JAVA)
    subprocess.run(["javac", "-d", str(build / "classes"), str(build / "SpiceScorer.java")], check=True)
    manifest = "Manifest-Version: 1.0\nMain-Class: edu.anu.spice.SpiceScorer\nClass-Path: " + " ".join(
        f"lib/{n}" for n in CORENLP_JARS
    )
    with zipfile.ZipFile(spice / "spice-1.0.jar", "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", manifest + "\n")
        for cls in (build / "classes").rglob("*.class"):
            jar.write(cls, cls.relative_to(build / "classes").as_posix())
    corenlp = spice / "lib" if corenlp_in_lib else root / "corenlp"
    corenlp.mkdir(exist_ok=True)
    _marker_jar(corenlp / CORENLP_JARS[0], "corenlp.txt")
    _marker_jar(corenlp / CORENLP_JARS[1], "corenlp-models.txt")
    return spice, corenlp


def _category(word: str, category: str) -> bool:
    if category == "All":
        return True
    return {
        "Color": word in COLOR,
        "Size": word in SIZE,
        "Cardinality": word in COUNT,
        "Attribute": word in COLOR | SIZE,
        "Relation": word in RELATION,
        "Object": word not in COLOR | SIZE | COUNT | RELATION,
    }[category]


def expected_scores(candidate: str, references: list[str], category: str = "All") -> float:
    """The stand-in's F-score, computed here: word sets, SPICE's P/R/F rule; NaN for an empty category."""
    test = {w for w in candidate.lower().split() if _category(w, category)}
    ref = {w for r in references for w in r.lower().split() if _category(w, category)}
    tp = len(test & ref)
    if category != "All" and not ref:
        return math.nan
    pr = tp / len(test) if test else 0.0
    re = tp / len(ref) if ref else 0.0
    return 2 * pr * re / (pr + re) if pr > 0 and re > 0 else 0.0

"""``sipt-lab data convert``: STRING-id interactomes + STRING FASTA -> the proteins domain's files,
and Hu et al.'s processed bio graphs -> the networks domain's TUDataset with edge attributes, whose
attribute masking then masks edges."""

import gzip

import numpy as np
import pytest
import torch
from domain_fixtures import bio_graphs, write_bio_processed

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.domains import get_domain
from sipt_lab.domains.convert import convert_pyg_bio, convert_string
from sipt_lab.domains.loaders import read_fasta, read_interactions

LINKS = """protein1 protein2 combined_score
9606.ENSP1 9606.ENSP2 900
9606.ENSP2 9606.ENSP1 900
9606.ENSP1 9606.ENSP3 150
9606.ENSP2 9606.ENSP9 700
"""
FASTA = """>9606.ENSP1 gene one
MKTAYI
AKQR
>9606.ENSP2
GAVLW
>9606.ENSP3
MMM
>9606.ENSP4 never interacts
CCC
>9606.ENSP1 a repeat
WWW
"""


def test_string_links_and_fasta_become_sequences_and_interactions(tmp_path, capsys):
    links = tmp_path / "9606.protein.links.v11.0.txt.gz"
    with gzip.open(links, "wt") as handle:
        handle.write(LINKS)
    (tmp_path / "4932.txt").write_text("YAL1 YAL2\nYAL2 YAL3\n")  # a tree-of-life file: ids without the taxon
    fasta = tmp_path / "protein.sequences.fa"
    fasta.write_text(FASTA + ">4932.YAL1\nKK\n>4932.YAL2\nRR\n>4932.YAL3\n\n")
    out = tmp_path / "proteins"
    done = convert_string([links, tmp_path / "4932.txt"], [fasta], out, min_score=400)
    corpus = read_fasta(out / "sequences.fasta")
    assert corpus.ids == ["9606.ENSP1", "9606.ENSP2", "4932.YAL1", "4932.YAL2"]  # ENSP3: below 400
    assert corpus.sequences[0] == "MKTAYIAKQR"
    graph = read_interactions(out / "interactions.tsv", corpus.ids)
    assert sorted(map(tuple, graph.edges().tolist())) == [(0, 1), (2, 3)]
    # ENSP9 and YAL3 (empty sequence) have none: their interactions are dropped; the second ENSP1 is a
    # repeat; ENSP2-ENSP1 is ENSP1-ENSP2 again, in the other direction
    assert (done.proteins, done.interactions, done.without_sequence, done.dropped, done.repeated) == (4, 2, 2, 2, 1)
    assert (done.self_loops, done.duplicates) == (0, 1)
    argv = ["data", "convert", "string", "--links", str(links), "--fasta", str(fasta), "--out", str(tmp_path / "cli")]
    assert main(argv) == 0 and "3 proteins in sequences.fasta, 2 interactions" in capsys.readouterr().out
    (tmp_path / "bad.txt").write_text("9606.ENSP1 9606.ENSP2 900\n9606.ENSP1\n")
    argv[argv.index("--links") + 1] = str(tmp_path / "bad.txt")
    assert main([*argv, "--overwrite"]) == 2
    assert "bad.txt line 2 is not 'protein1 protein2 [score]'" in capsys.readouterr().err


@pytest.mark.parametrize("pyg1", [False, True])
def test_processed_bio_graphs_become_a_tudataset_with_edge_types(tmp_path, pyg1):
    graphs = bio_graphs(6)
    processed = write_bio_processed(tmp_path / "processed" / "geometric_data_processed.pt", graphs, pyg1)
    (tmp_path / "out").mkdir()
    done = convert_pyg_bio(processed, tmp_path / "out")
    assert (done.graphs, done.pretrain_terms, done.finetune_terms) == (6, 12, 4)
    assert done.edges == sum(g.edge_index.shape[1] for g in graphs)
    first_lines = (tmp_path / "out" / "ppi_edge_attributes.txt").read_text().splitlines()[:2]
    assert first_lines == [",".join(map(str, graphs[0].edge_attr[k, :7].int().tolist())) for k in range(2)]
    data = get_domain("networks").read(tmp_path / "out")
    assert len(data.graphs) == 6 and data.code_names == ("",)
    for original, read in zip(graphs, data.graphs):
        e = original.edge_index.shape[1] // 2
        assert read.edge_index.shape == (2, 2 * e) and read.edge_attr.shape == (2 * e,)
        forward = read.edge_index[:, :e].T.tolist()
        assert sorted(forward) == sorted(sorted(pair) for pair in original.edge_index[:, ::2].T.tolist())
        names = [data.edge_code_names[c] for c in read.edge_attr[:e].tolist()]
        index = {tuple(sorted(p)): k for k, p in enumerate(original.edge_index.T.tolist())}
        expected = [",".join(map(str, original.edge_attr[index[tuple(p)], :7].int().tolist())) for p in forward]
        assert names == expected and read.edge_attr[:e].tolist() == read.edge_attr[e:].tolist()
    task = data.tasks["go"]
    # a column no graph sets names no term (the fixture sets downstream columns 0 and 1 only)
    assert task.kind == "multilabel" and task.label_names == ("downstream-0", "downstream-1")
    assert [sorted(data.go_terms[k].tolist()) for k in (0, 1)] != [[], []]


def test_a_file_that_is_not_hu_et_al_s_dataset_is_a_one_line_error(tmp_path, capsys):
    path = tmp_path / "x.pt"
    torch.save({"weights": torch.ones(2)}, path)
    with pytest.raises(SiptError, match="is not a PyG InMemoryDataset file"):
        convert_pyg_bio(path, tmp_path / "out")
    unsupervised = [g.clone() for g in bio_graphs(2)]
    for g in unsupervised:
        del g.go_target_pretrain, g.go_target_downstream
    write_bio_processed(path, unsupervised)
    assert main(["data", "convert", "pyg-bio", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "has no go_target_pretrain, go_target_downstream; pass Hu et al.'s supervised bio graphs" in err
    assert len(err.strip().splitlines()) == 1


def test_attribute_masking_masks_edges_of_converted_graphs(tmp_path):
    from sipt_lab.domains.networks import gin_source
    from sipt_lab.models import load_encoder
    from sipt_lab.models.graph_encoder import GINConfig, GraphInit
    from sipt_lab.training import TrainConfig, embed, pretrain

    convert_pyg_bio(write_bio_processed(tmp_path / "bio.pt", bio_graphs(32)), tmp_path / "out")
    data = get_domain("networks").read(tmp_path / "out")
    source = gin_source("gin", data)
    assert source.config.n_edge_values == len(data.edge_code_names) == 4  # {0, 0+4} x rings, {1, 1+5} x stars
    featurizer = source.tokenizer(data.samples, None)
    encoder = source.encoder(featurizer)[0].eval()
    inputs = featurizer.inputs(data.samples[:2], torch.device("cpu"))
    assert inputs.lengths.tolist() == [g.edge_index.shape[1] // 2 + 1 for g in data.samples[:2]]
    mask = np.zeros((2, inputs.lengths.max()), dtype=bool)
    mask[0, 2] = mask[1, 1] = True  # edge 1 of graph 0, edge 0 of graph 1
    seen, encode = {}, encoder.embed_and_masked_logits

    def spy(batch, positions):
        seen["codes"] = batch.edge_attr.clone()
        return encode(batch, positions)

    encoder.embed_and_masked_logits = spy
    _, logits, targets = inputs.encode(encoder, np.array([0, 1]), mask, True)
    e0, e1 = (g.edge_index.shape[1] // 2 for g in data.samples[:2])
    masked = torch.nonzero(seen["codes"] == featurizer.mask_id).ravel().tolist()
    assert masked == [1, 1 + e0, 2 * e0, 2 * e0 + e1]  # both directions of each masked edge
    assert logits.shape == (2, 4)
    assert targets.tolist() == [int(data.samples[0].edge_attr[1]), int(data.samples[1].edge_attr[0])]
    assert data.samples[0].edge_attr.max() < featurizer.mask_id  # the samples themselves stay unmasked
    graph = get_domain("networks").graphs["go-hamming"](data, 0)
    config = TrainConfig(steps=30, batch_size=16, lr=3e-3, lambda_si=0.0, mask_prob=0.3, device="cpu", log_every=10)
    result = pretrain(data.samples, graph, config, GraphInit(GINConfig(n_values=1, hidden=16, n_edge_values=4)))
    mlm = result.history["mlm"]
    assert mlm[-5:].mean() < 0.8 * mlm[:5].mean()  # a masked edge's type follows its graph's other edges
    loaded, loaded_featurizer = load_encoder(result.save(tmp_path / "gin"))
    assert loaded_featurizer == result.tokenizer and loaded_featurizer.mask_id == 4
    vectors = embed(result.encoder, result.tokenizer, data.samples)
    assert np.allclose(embed(loaded, loaded_featurizer, data.samples), vectors, atol=1e-5)


@pytest.mark.slow
def test_domain_run_networks_on_converted_bio_graphs(tmp_path, monkeypatch, capsys):
    import dataclasses
    import json

    from sipt_lab.domains import DOMAINS
    from sipt_lab.models.graph_encoder import GINConfig, GraphInit

    networks = get_domain("networks")

    def small(init, data):  # a 16-wide GIN: the paper's 300 is slow on shared cores
        return GraphInit(GINConfig(n_values=len(data.code_names), hidden=16, n_edge_values=len(data.edge_code_names)))

    monkeypatch.setitem(DOMAINS, "networks", dataclasses.replace(networks, encoder_source=small))
    out = tmp_path / "bio"
    assert (
        main(
            [
                "data",
                "convert",
                "pyg-bio",
                str(write_bio_processed(tmp_path / "b.pt", bio_graphs(40))),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    argv = ["domain", "run", "networks", "--data", str(out), "--seeds", "1", "--steps", "3", "--device", "cpu"]
    assert main([*argv, "--executor", "serial", "--out", str(tmp_path / "run")]) == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    sipt = summary["arms"]["sipt[go-hamming]"]
    assert summary["kind"] == "multilabel" and 0.0 <= sipt["probe.macro_auroc"]["mean"] <= 1.0


def test_wiki_descriptions_become_per_sample_labels_of_every_described_article(tmp_path, capsys):
    from sipt_lab.domains.loaders import read_term_sets
    from sipt_lab.domains.wiki import load_wiki

    out = tmp_path / "heads.tsv"
    assert main(["data", "convert", "wiki-descriptions", "--out", str(out)]) == 0
    assert "7,511 wiki articles labelled with 381 description heads" in capsys.readouterr().out
    wiki = load_wiki()
    terms = read_term_sets(out, wiki.ids)
    assert terms.listed.sum() == 7_511 and len(terms.terms) == 381 and (terms.matrix.sum(axis=1) <= 1).all()
    film = wiki.ids.index("2001: A Space Odyssey")  # "1968 film by Stanley Kubrick"
    assert terms.terms[terms.matrix[[film]].indices[0]] == "film"
    assert main(["data", "convert", "wiki-descriptions", "--min-count", "0", "--out", str(out)]) == 2
    assert "--min-count must be >= 1, got 0" in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["three-types", "short-slices", "flat-edge-index", "not-a-pickle"])
def test_a_malformed_processed_file_is_one_line(tmp_path, capsys, damage):
    path = tmp_path / "x.pt"
    graphs = bio_graphs(2)
    if damage == "three-types":
        for graph in graphs:
            graph.edge_attr = graph.edge_attr[:, :3]
    write_bio_processed(path, graphs)
    if damage in ("short-slices", "flat-edge-index"):
        data, slices = torch.load(path, weights_only=False)
        if damage == "short-slices":
            slices["x"] = slices["x"][:-1]
        else:
            data.edge_index = data.edge_index[0]
        torch.save((data, slices), path)
    if damage == "not-a-pickle":
        path.write_bytes(b"PK\x03\x04 truncated zip")
    assert main(["data", "convert", "pyg-bio", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sipt-lab: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()

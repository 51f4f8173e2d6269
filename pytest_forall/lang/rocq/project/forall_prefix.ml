(* pytest-forall: the compiled prefix of a file whose compile stops at an error (issue 32; Coq 8.16's API).

   Loaded into every coqc of the project's default build by a [Local Declare ML Module] (not exported: the
   .vo of a file that compiles is byte for byte the same). When coqc exits after an error, the library compiled
   so far -- every sentence before the failing one, run and kernel-checked by this very process -- is saved to
   $FORALL_PREFIX_DIR/<library>.vo, the one open proof (the item the error is in) admitted first, as the
   template of that item would be. Nothing is saved when a section or module is still open, when more than
   one proof is open, or when coqc succeeded (its own save ended the library: ours raises, and is dropped).
   The harness reads that .vo as it reads any build's: the judge in a separate process, and coqchk. *)

let saved = ref false

let save dir =
  let proofs = Vernacstate.Declare.get_all_proof_names () in
  if List.length proofs > 1 then failwith "more than one open proof";
  let admitted = match Vernacstate.Declare.get_pstate () with
    | Some proof ->
      let named = Names.Id.to_string (Vernacstate.Declare.get_current_proof_name ()) in
      let pm = NeList.head (Vernacstate.Declare.get_program ()) in
      let _ = Declare.Proof.save_admitted ~pm ~proof in
      Vernacstate.Declare.discard_all ();
      named
    | None -> "" in
  if Lib.sections_are_opened () then failwith "a section is open";
  let ldir = Lib.library_dp () in
  let name = Names.DirPath.to_string ldir in
  let out = Filename.concat dir (name ^ ".vo") in
  let partial = Filename.concat dir ("partial-" ^ name ^ ".vo") in (* coqc's save wants the suffix *)
  Library.save_library_to ~output_native_objects:false Library.ProofsTodoNone ldir partial;
  (* the proof admitted, if any: named in the items' evidence *)
  let note = open_out (Filename.concat dir (name ^ ".admitted")) in
  output_string note admitted;
  close_out note;
  Sys.rename partial out

let () = at_exit (fun () ->
  match Sys.getenv_opt "FORALL_PREFIX_DIR" with
  | Some dir when dir <> "" && not !saved ->
    saved := true;
    (try save dir with _ -> ())
  | _ -> ())

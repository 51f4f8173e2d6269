(* The judge plugin's (forall_judge.mlg) view of the Rocq 9.x API (rocq-runtime); toolchain.py picks this file by version.
   Differences from 8.20: Assumptions.assumptions takes the list of roots (no term);
   mutual_inductive_body has no mind_ntypes (the length of mind_packets); the record kind is per packet; template
   polymorphism is the mutual block's mind_template, not a packet's mind_arity. *)
let proj c = match Constr.kind c with Constr.Proj (p, _, c) -> (p, c) | _ -> assert false
let case_return ((nas, p), _) = (nas, p)
let cumulative_sprop (_ : Declarations.typing_flags) = false
let abstract_size a = let (q, u) = UVars.AbstractContext.size a in Printf.sprintf "%d,%d" q u
let assumptions st gr c =
  Assumptions.assumptions ~add_opaque:false ~add_transparent:false Library.indirect_accessor st [gr]
let other_term c = match Constr.kind c with
  | Constr.String s -> "(string " ^ String.escaped (Pstring.to_string s) ^ ")"
  | _ -> CErrors.user_err (Pp.str "forall-judge: unsupported term")
let other_relevance (r : Sorts.relevance) = match r with
  | Sorts.RelevanceVar _ -> "?" | _ -> CErrors.user_err (Pp.str "forall-judge: unsupported relevance")
let other_sort (s : Sorts.t) = match s with
  | Sorts.QSort _ -> "QSort" | _ -> CErrors.user_err (Pp.str "forall-judge: unsupported sort")
let other_body (b : _ Declarations.constant_def) = match b with
  | Declarations.Symbol _ -> "symbol" | _ -> CErrors.user_err (Pp.str "forall-judge: unsupported constant body")
let ntypes (mb : Declarations.mutual_inductive_body) = Array.length mb.Declarations.mind_packets
let record_kind (mb : Declarations.mutual_inductive_body) = match mb.Declarations.mind_packets.(0).Declarations.mind_record with
  | Declarations.NotRecord -> "norec" | Declarations.FakeRecord -> "fakerec" | Declarations.PrimRecord _ -> "primrec"
let arity_kind (mb : Declarations.mutual_inductive_body) _ =
  if mb.Declarations.mind_template = None then " regular" else " template"
let instance_levels u = snd (UVars.Instance.to_array u)
(* the inductive a recursive position is a value of (the block's own or a nested one); a nested primitive array
   (RecArgPrim) is never a structural subterm: the detectors stay conservative *)
let recarg_inductive (r : Declarations.recarg) = match r with
  | Declarations.Mrec (Declarations.RecArgInd i) -> Some i | _ -> None
(* A file's module structure for ForallJudgeFile (project mode), whatever the version's module API. *)
type kfield = KConst | KMind | KModule of (Names.Label.t * kfield) list option | KModType | KOther
let rec fields_of (s : Mod_declarations.structure_body) = List.map (fun (l, f) -> (l, kfield f)) s
and kfield f = match f with
  | Declarations.SFBconst _ -> KConst
  | Declarations.SFBmind _ -> KMind
  | Declarations.SFBmodule mb -> (match Mod_declarations.mod_type mb with
      | Declarations.NoFunctor s -> KModule (Some (fields_of s))
      | Declarations.MoreFunctor _ -> KModule (None))
  | Declarations.SFBmodtype _ -> KModType
  | Declarations.SFBrules _ -> KOther
let file_structure env mp = match (try Some (Environ.lookup_module mp env) with Not_found -> None) with
  | Some mb -> (match Mod_declarations.mod_type mb with Declarations.NoFunctor s -> Some (fields_of s) | _ -> None)
  | None -> None
(* How a module of the file is implemented, for the judge's module walk (forall_judge.mlg, module_findings): "" for
   a plain [Module M. ... End M.], else what it is (sealed, algebraic: an alias or a functor application, declared). *)
let module_impl env mp = match (try Some (Environ.lookup_module mp env) with Not_found -> None) with
  | None -> "an unreadable module"
  | Some mb -> (match Mod_declarations.mod_expr mb with
      | Mod_declarations.FullStruct -> ""
      | Mod_declarations.Struct _ -> "a module sealed by a signature (module subtyping)"
      | Mod_declarations.Algebraic _ -> "a module alias or functor application"
      | Mod_declarations.Abstract -> "a declared module (Declare Module)")
(* The delta resolver of a module of the file (its names' canonical names: an included or aliased field's canonical
   name is elsewhere), for the module walk; None when the module cannot be read. *)
let module_delta env mp = match (try Some (Environ.lookup_module mp env) with Not_found -> None) with
  | None -> None
  | Some mb -> Some (Mod_declarations.mod_delta mb)
(* Project mode's shared walk (forall_judge.mlg, shared_assumptions): Coq's Print Assumptions traversal of many
   constants at once — every object reached, with the objects its body (an inductive's declaration) mentions —
   and Coq's assumptions of them all together. Rocq 9 also walks an axiom's type but records no edge for it: an
   axiom's edges are what Coq's walk of that axiom alone reaches. *)
let closure_graph cs =
  let open Names in
  let (_, g, _) = Assumptions.traverse Library.indirect_accessor (List.map (fun c -> GlobRef.ConstRef c) cs) in
  GlobRef.Map_env.mapi (fun gr deps -> match deps, gr with
      | Some s, _ -> s
      | None, GlobRef.ConstRef _ ->
        let (_, own, _) = Assumptions.traverse Library.indirect_accessor [gr] in
        GlobRef.Set_env.remove gr (GlobRef.Map_env.fold (fun k _ acc -> GlobRef.Set_env.add k acc) own
                                     GlobRef.Set_env.empty)
      | None, _ -> GlobRef.Set_env.empty) g
let assumptions_of st cs =
  Assumptions.assumptions ~add_opaque:false ~add_transparent:false Library.indirect_accessor st
    (List.map (fun c -> Names.GlobRef.ConstRef c) cs)
(* A universe-polymorphic constant's own context (its bound levels Var 0..n-1 and their constraints) pushed on the
   environment's graph, so the relations between its levels are decided by the kernel's graph. *)
let push_universes (u : Declarations.universes) env = match u with
  | Declarations.Monomorphic -> env
  | Declarations.Polymorphic a -> Environ.push_context ~strict:false (UVars.AbstractContext.repr a) env
